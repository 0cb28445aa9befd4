/** Cheap checks of whether FUSE mounts can work here (no mount is attempted). */
import { accessSync, constants, existsSync } from 'node:fs';

export function fuseAvailable(): { ok: boolean; reason?: string } {
  if (process.platform !== 'linux') return { ok: false, reason: 'FUSE Workspaces need Linux' };
  try {
    accessSync('/dev/fuse', constants.R_OK | constants.W_OK);
  } catch {
    return { ok: false, reason: '/dev/fuse is missing or not accessible' };
  }
  const dirs = (process.env.PATH ?? '/usr/bin:/bin').split(':');
  if (!dirs.some((d) => existsSync(`${d}/fusermount`) || existsSync(`${d}/fusermount3`))) return { ok: false, reason: 'fusermount is not installed (Debian: apt-get install fuse3)' };
  if (process.getuid?.() !== 0 && !dirs.some((d) => existsSync(`${d}/fusermount`))) return { ok: false, reason: 'unprivileged mounts need fusermount' };
  return { ok: true };
}
