/** Cheap checks of whether FUSE mounts can work here (no mount is attempted). */
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';

/**
 * Root mounts through the kernel backend (mount(2) on /dev/fuse) and needs no helper; an
 * ordinary user mounts through fuse-native, whose libfuse 2 calls the setuid `fusermount`.
 */
export function fuseAvailable(): { ok: boolean; reason?: string } {
  if (process.platform !== 'linux') return { ok: false, reason: 'FUSE Workspaces need Linux' };
  try {
    accessSync('/dev/fuse', constants.R_OK | constants.W_OK);
  } catch {
    return { ok: false, reason: '/dev/fuse is missing or not accessible' };
  }
  if (process.getuid?.() === 0) return { ok: true };
  const dirs = (process.env.PATH ?? '/usr/bin:/bin').split(':');
  if (!dirs.some((d) => existsSync(`${d}/fusermount`))) return { ok: false, reason: 'unprivileged mounts need fusermount (Debian: apt-get install fuse)' };
  return { ok: true };
}

/**
 * Whether an ordinary user may mount with allow_other: fusermount allows it only when
 * /etc/fuse.conf has a `user_allow_other` line (root always may).
 */
export function userAllowOther(conf = '/etc/fuse.conf'): boolean {
  try {
    return readFileSync(conf, 'utf8')
      .split('\n')
      .some((l) => l.trim() === 'user_allow_other');
  } catch {
    return false;
  }
}
