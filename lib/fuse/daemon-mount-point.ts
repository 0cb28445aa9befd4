/**
 * Where the daemon may mount a Workspace: an existing, empty directory that is not inside a
 * served mount (a mount point inside one would make the daemon's own calls reach a mount), not
 * being mounted already, and not hiding the Store or its state directory.
 */
import { readdir, realpath, stat } from 'node:fs/promises';
import { isAbsolute, sep } from 'node:path';
import { LayerFsError } from '../errors.js';
import type { Entry } from './daemon-served.js';
import { mountTable } from './mounttab.js';
import type { DaemonPaths } from './protocol.js';

export function within(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

/** The real path of `path`, once it is a fit mount point (typed errors otherwise). */
export async function checkMountPoint(path: string, mounts: Iterable<Entry>, pendingPaths: Iterable<string>, paths: DaemonPaths): Promise<string> {
  if (typeof path !== 'string' || !isAbsolute(path) || path.includes('\0')) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'path must be an absolute path');
  let real: string;
  try {
    real = await realpath(path);
  } catch (e) {
    throw new LayerFsError('ERR_NOT_FOUND', `the mount point ${path} does not exist`, { path, errno: (e as NodeJS.ErrnoException).code, hint: 'create an empty directory first' });
  }
  const st = await stat(real);
  if (!st.isDirectory()) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `${path} is not a directory`, { path });
  if ((await readdir(real)).length > 0) throw new LayerFsError('ERR_NOT_EMPTY', `${path} is not empty`, { path, hint: 'mount on an empty directory' });
  for (const e of mounts) {
    if (within(real, e.real)) throw new LayerFsError('ERR_UNSAFE_PATH', `${path} is inside the mounted Workspace ${e.record.workspaceId}`, { path });
  }
  for (const pending of pendingPaths) if (within(real, pending) || within(pending, real)) throw new LayerFsError('ERR_BUSY', `${path} is being mounted already`, { path });
  const storeDir = await realpath(paths.dir);
  const storeFile = await realpath(paths.store);
  if (within(storeDir, real) || within(storeFile, real)) throw new LayerFsError('ERR_UNSAFE_PATH', `a mount at ${path} would hide the Store or its state directory`, { path });
  const table = await mountTable();
  if (table.has(real)) throw new LayerFsError('ERR_BUSY', `something is already mounted at ${path}`, { path });
  return real;
}
