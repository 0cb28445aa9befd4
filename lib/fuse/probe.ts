/** Cheap checks of whether FUSE mounts can work here (no mount is attempted). */
import { accessSync, constants, readFileSync } from 'node:fs';
import { fusermountPath } from './attach.js';

/**
 * Root mounts with mount(2) from the addon and needs no helper; an ordinary user's mounts are
 * made by the setuid fusermount3 (or libfuse 2's fusermount), which hands the descriptor back.
 */
export function fuseAvailable(): { ok: boolean; reason?: string } {
  if (process.platform !== 'linux') return { ok: false, reason: 'FUSE Workspaces need Linux' };
  try {
    accessSync('/dev/fuse', constants.R_OK | constants.W_OK);
  } catch {
    return { ok: false, reason: '/dev/fuse is missing or not accessible' };
  }
  if (process.getuid?.() === 0) return { ok: true };
  if (fusermountPath() === null) return { ok: false, reason: 'unprivileged mounts need fusermount3 (Debian: apt-get install fuse3)' };
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
