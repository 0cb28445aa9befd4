/** The mount table of this namespace, and detaching (stale) mounts: shared by the daemon and its clients. */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { detachFuse } from './attach.js';

function execFileP(cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  return new Promise((resolve) => execFile(cmd, args, { timeout: 30_000 }, (err, stdout, stderr) => resolve({ ok: !err, out: `${stdout}${stderr}`.trim() })));
}

function unescapeMountinfo(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Mount points of this mount namespace with their file system types. */
export async function mountTable(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let text = '';
  try {
    text = await readFile('/proc/self/mountinfo', 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    const dash = f.indexOf('-');
    if (f.length < 5 || dash < 0) continue;
    out.set(unescapeMountinfo(f[4]!), f[dash + 1] ?? '');
  }
  return out;
}

/**
 * Detaches a mount point (lazily: a stale FUSE mount cannot be unmounted otherwise): umount2 from
 * the addon as root, fusermount3 -uz for an ordinary user's own mount, umount(8) last.
 */
export async function detach(path: string): Promise<boolean> {
  if (await detachFuse(path)) return true;
  return (await execFileP('umount', ['-l', path])).ok;
}

/**
 * Detaches a FUSE mount left at `path` by a daemon that is gone (a lost Workspace). Returns
 * whether something was detached. Reads only the mount table: the path itself may be stale.
 */
export async function detachStale(path: string): Promise<boolean> {
  const type = (await mountTable()).get(path);
  if (type === undefined || !type.startsWith('fuse')) return false;
  return detach(path);
}
