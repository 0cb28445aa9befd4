/**
 * Attaching a kernel-backend mount and detaching it, for root and for an ordinary user alike.
 * Root: mount(2) of a fresh /dev/fuse descriptor from the addon (no mount(8) process: that was
 * 57–128 ms of a Workspace's create under load). An ordinary user: the setuid fusermount3 mounts
 * and hands the /dev/fuse descriptor back over a Unix socket named by `_FUSE_COMMFD` (as
 * SCM_RIGHTS); from there on the daemon speaks the same kernel protocol as root's, with each
 * caller's credentials in every request.
 */
import { spawn } from 'node:child_process';
import { accessSync, closeSync, constants as fsc } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { fuseMount, receiveFd, socketPair, unmount } from '../native/mount.js';

export interface AttachOptions {
  /** Source shown in /proc/mounts (letters, digits, _.:@+-). */
  fsname: string;
  /** Other users may enter (the kernel checks each inode's mode). */
  allowOther: boolean;
}

/** The fusermount on PATH: libfuse 3's, else libfuse 2's (both speak `_FUSE_COMMFD`). */
export function fusermountPath(): string | null {
  const dirs = (process.env.PATH ?? '/usr/bin:/bin').split(':').filter((d) => d.startsWith('/'));
  for (const name of ['fusermount3', 'fusermount']) {
    for (const d of dirs) {
      try {
        accessSync(`${d}/${name}`, fsc.X_OK);
        return `${d}/${name}`;
      } catch {
        /* not here */
      }
    }
  }
  return null;
}

const isRoot = (): boolean => process.getuid?.() === 0;

/**
 * The mount options: nosuid,nodev always (a state is data: a setuid binary or a device node in
 * it grants nothing). With allow_other the kernel checks each inode's mode
 * (default_permissions); a root mount without it admits only root, who would pass those checks
 * anyway, so they are left out there: the kernel then stops fetching the parent's attributes
 * after every create.
 */
function permissionOptions(allowOther: boolean): string[] {
  const out = isRoot() && !allowOther ? [] : ['default_permissions'];
  if (allowOther) out.push('allow_other');
  return out;
}

function runProgram(cmd: string, args: string[], extra: { fd?: number; env?: NodeJS.ProcessEnv } = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const stdio: ('ignore' | 'pipe' | number)[] = ['ignore', 'pipe', 'pipe'];
    if (extra.fd !== undefined) stdio.push(extra.fd);
    const child = spawn(cmd, args, { stdio, cwd: '/', env: extra.env ?? process.env });
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', (e) => resolve({ code: -1, out: e.message }));
    child.on('close', (code) => resolve({ code, out: out.trim() }));
  });
}

/** fusermount mounts; the /dev/fuse descriptor comes back over a socket pair. */
async function attachThroughFusermount(mountpoint: string, opts: AttachOptions): Promise<number> {
  const bin = fusermountPath();
  if (!bin) throw new LayerFsError('ERR_NATIVE', 'an ordinary user mounts through fusermount3, which is not installed', { path: mountpoint, hint: 'Debian: apt-get install fuse3' });
  const options = ['nosuid', 'nodev', ...permissionOptions(opts.allowOther), `fsname=${opts.fsname}`, 'subtype=layerfs'].join(',');
  const [mine, theirs] = socketPair();
  try {
    // The child gets `theirs` as its fd 3 (a copy without close-on-exec); ours closes once it runs.
    const running = runProgram(bin, ['-o', options, '--', mountpoint], { fd: theirs, env: { ...process.env, _FUSE_COMMFD: '3' } });
    closeSync(theirs);
    const r = await running;
    if (r.code !== 0) {
      const hint = /allow_other/.test(r.out) ? "add user_allow_other to /etc/fuse.conf, or mount with allowOther: false" : /\/dev\/fuse/.test(r.out) ? '/dev/fuse must be usable by this user (mode 0666 on most systems)' : 'see the message of fusermount';
      throw new LayerFsError('ERR_NATIVE_IO', `${bin} could not mount ${mountpoint}: ${r.out || `exit ${r.code}`}`, { path: mountpoint, syscall: 'fusermount', hint });
    }
    const fd = receiveFd(mine);
    if (fd === null) {
      await detachFuse(mountpoint);
      throw new LayerFsError('ERR_NATIVE_IO', `${bin} mounted ${mountpoint} but sent no descriptor`, { path: mountpoint, syscall: 'recvmsg', hint: 'is this fusermount speaking the _FUSE_COMMFD protocol?' });
    }
    return fd;
  } finally {
    closeSync(mine);
  }
}

/**
 * Mounts a kernel-backend file system at `mountpoint` and returns the /dev/fuse descriptor to
 * serve (close-on-exec). The kernel has queued INIT on it when this returns.
 */
export async function attachFuse(mountpoint: string, opts: AttachOptions): Promise<number> {
  if (!isRoot()) return attachThroughFusermount(mountpoint, opts);
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  const options = [`rootmode=40000`, `user_id=${uid}`, `group_id=${gid}`, ...permissionOptions(opts.allowOther)].join(',');
  return fuseMount(mountpoint, { source: opts.fsname, subtype: 'layerfs', options });
}

/**
 * Detaches (lazily) the mount at `mountpoint`: umount2(MNT_DETACH) as root, fusermount -uz
 * otherwise (the kernel lets an ordinary user unmount only through it). Whether it succeeded.
 */
export async function detachFuse(mountpoint: string): Promise<boolean> {
  if (isRoot()) {
    try {
      await unmount(mountpoint, true);
      return true;
    } catch {
      /* not mounted, or refused: fusermount may still know better (below) */
    }
  }
  const bin = fusermountPath();
  return bin !== null && (await runProgram(bin, ['-u', '-z', '--', mountpoint])).code === 0;
}
