/**
 * With the writeback cache (kernel-features.ts) a returned write(2) may still sit in the kernel's
 * page cache: before a commit or a status the daemon asks the kernel to send every dirty page of
 * the mount (syncfs(2), then fsync(2) of the files open for writing), and only then hands the
 * request to the serving thread, which so sees every byte of every write(2) that returned
 * before the request came.
 *
 * The flush is made by a child process (`sync -f`), never by a thread of the daemon: a daemon
 * thread waiting on its own mount's writeback when the daemon is killed would keep the daemon
 * from exiting (the same reason as waker.ts), while a child's wait ends when the connection dies.
 */
import { spawn } from 'node:child_process';
import { LayerFsError } from '../errors.js';
import { kernelFeatures } from './kernel-features.js';

/** Whether mounts made now cache writes in the kernel (and so need a flush before a commit). */
export function mountsCacheWrites(): boolean {
  return kernelFeatures().writeback;
}

/**
 * Writes back the mount's dirty pages; resolves once the daemon has received them. A failed
 * flush fails the request it precedes: a commit without those bytes would not be the cut it
 * claims to be.
 *
 * `writers`: the files open for writing (paths from the mount's root). Since Linux 6.16 syncfs
 * starts a FUSE mount's writeback but no longer waits for it (a server could hang it), so a
 * page a shared mapping dirtied after its descriptor closed could reach the daemon after the
 * request. fsync still waits, and only a file with a handle open for writing (a mapping keeps
 * one) can hold dirty pages: those are fsynced after the syncfs.
 */
export async function flushMount(mountpoint: string, writers: string[] = []): Promise<void> {
  await runSync(mountpoint, ['-f', mountpoint]);
  // Many at a time, within a command line's bounds. A file renamed or removed since the list was
  // taken makes `sync` exit 1 having fsynced the others: only a failure to run it fails.
  for (let i = 0; i < writers.length; i += 256) await runSync(mountpoint, ['--', ...writers.slice(i, i + 256).map((p) => mountpoint + p)], true);
}

function runSync(mountpoint: string, args: string[], anyExit = false): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (why: string) =>
      reject(new LayerFsError('ERR_NATIVE_IO', `could not write back the kernel's cached writes of ${mountpoint}: ${why}`, { path: mountpoint, hint: `retry; or turn the writeback cache off with LAYERFS_FUSE_FEATURES=-writeback (restart the daemon)` }));
    const child = spawn('sync', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', (e) => failed(e.message));
    child.on('close', (code) => (code === 0 || (anyExit && code === 1) ? resolve() : failed(err.trim() || `sync exited ${code}`)));
  });
}
