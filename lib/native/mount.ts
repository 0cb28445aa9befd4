/**
 * Mounting FUSE file systems from the addon: mount(2) of a fresh /dev/fuse descriptor and
 * umount2(2) (both need root), and the receiving end of fusermount's descriptor hand-over (a
 * Unix socket pair and SCM_RIGHTS), with which an ordinary user's mount gets the same kernel
 * protocol as root's. mount(2) and umount2(2) run on the addon's thread pool.
 */
import { constants as osc } from 'node:os';
import { LayerFsError } from '../errors.js';
import { native } from './binding.js';
import { fromNative } from './wrap.js';

const HINTS: Record<string, string> = {
  EPERM: 'mounting with mount(2) needs root (CAP_SYS_ADMIN); an ordinary user mounts through fusermount3',
  EACCES: 'check the permissions of /dev/fuse and of the mount point',
  ENOENT: 'the mount point (or /dev/fuse) does not exist',
  ENOTDIR: 'the mount point must be a directory',
  EBUSY: 'something is mounted there already, or the mount is busy',
  EINVAL: 'nothing is mounted there, or the options were refused',
  ENODEV: 'the kernel has no FUSE support (modprobe fuse)',
};

function typed(e: unknown, path: string): LayerFsError {
  const errno = (e as { errno?: unknown })?.errno;
  const hint = typeof errno === 'string' ? HINTS[errno] : undefined;
  return fromNative(e, { path, ...(hint ? { hint } : {}) });
}

function errnoName(n: number): string {
  return Object.entries(osc.errno).find(([, v]) => v === n)?.[0] ?? String(n);
}

function checkPath(path: string, what: string): void {
  if (typeof path !== 'string' || !path.startsWith('/') || path.includes('\0')) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `${what} must be an absolute path`, { path: String(path) });
  }
}

/**
 * Opens /dev/fuse and mounts it at `mountpoint` (type `fuse.<subtype>`, always nosuid,nodev)
 * with data `fd=N,<options>`; resolves to the descriptor the caller serves. On failure nothing
 * stays open or mounted, and the error carries errno, syscall and path.
 */
export async function fuseMount(mountpoint: string, opts: { source: string; subtype: string; options: string }): Promise<number> {
  checkPath(mountpoint, 'mount point');
  if (!/^[A-Za-z0-9_.:@+-]+$/.test(opts.source) || !/^[A-Za-z0-9_.-]+$/.test(opts.subtype)) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', 'the source and subtype of a mount are letters, digits and _.:@+-', { name: `${opts.source} ${opts.subtype}` });
  }
  if (/^fd=|,fd=/.test(opts.options)) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'fd= is set by fuseMount itself', { name: opts.options });
  try {
    return await native.fuseMount(mountpoint, opts.source, `fuse.${opts.subtype}`, opts.options);
  } catch (e) {
    throw typed(e, mountpoint);
  }
}

/** umount2(2) of `mountpoint`: lazily (MNT_DETACH) unless `lazy` is false; never follows a symlink. */
export async function unmount(mountpoint: string, lazy = true): Promise<void> {
  checkPath(mountpoint, 'mount point');
  try {
    await native.unmount(mountpoint, lazy);
  } catch (e) {
    throw typed(e, mountpoint);
  }
}

/** A connected pair of Unix stream sockets, both close-on-exec. */
export function socketPair(): [number, number] {
  try {
    return native.socketPair();
  } catch (e) {
    throw fromNative(e);
  }
}

/**
 * The descriptor waiting on `socket` as SCM_RIGHTS (close-on-exec), or null when none is
 * waiting or the message carried none. Never blocks.
 */
export function receiveFd(socket: number): number | null {
  const r = native.receiveFd(socket);
  if (r >= 0) return r;
  if (r === -11 || r === -42) return null; // EAGAIN, ENOMSG
  throw new LayerFsError('ERR_NATIVE_IO', `cannot receive a descriptor on socket ${socket}: ${errnoName(-r)}`, { errno: errnoName(-r), syscall: 'recvmsg' });
}

/**
 * Registers the plain file at `path` as a FUSE passthrough backing file on the /dev/fuse
 * descriptor `devFd` (Linux 6.9+, CAP_SYS_ADMIN): its backing id (> 0), or -errno (EPERM without
 * the capability, ENOTTY or EOPNOTSUPP on a kernel without passthrough). Never throws for those:
 * the caller serves the file itself instead.
 */
export function fuseBackingOpen(devFd: number, path: string): number {
  return native.fuseBackingOpen(devFd, path);
}

/** Drops a backing id (the kernel keeps the file while opens that use it live): 0, or -errno. */
export function fuseBackingClose(devFd: number, id: number): number {
  return native.fuseBackingClose(devFd, id);
}
