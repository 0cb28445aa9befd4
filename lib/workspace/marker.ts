/**
 * Workspace directory markers: what a Workspace's directory was when this user created the
 * Workspace (device and inode, and whether the directory was made for it), kept in the private
 * `<store>.d/workspaces/`, never in the Store. A Workspace row only names a path, and a Store
 * may be forged or handed over, so ending a Workspace removes (or detaches) its directory only
 * when the marker is there and the directory is still the one recorded.
 */
import { closeSync, constants as fsc, lstatSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDir, openPrivateFile } from '../monitor/private-file.js';
import { toHex } from '../format/hex.js';
import { LayerFsError } from '../errors.js';

export interface DirMarker {
  path: string;
  dev: number;
  ino: number;
  /** The Workspace made the directory (it was absent), so ending it may remove it even when empty. */
  created: boolean;
}

function markerDir(storePath: string): string {
  return join(`${storePath}.d`, 'workspaces');
}

function markerPath(storePath: string, id: Buffer): string {
  return join(markerDir(storePath), `${toHex(id)}.json`);
}

/** Records the Workspace directory at `path` as it is now. */
export function writeMarker(storePath: string, id: Buffer, path: string, created: boolean): void {
  ensurePrivateDir(`${storePath}.d`);
  ensurePrivateDir(markerDir(storePath));
  const st = lstatSync(path);
  const m: DirMarker = { path, dev: st.dev, ino: st.ino, created };
  const fd = openPrivateFile(markerPath(storePath, id), fsc.O_WRONLY | fsc.O_CREAT | fsc.O_TRUNC);
  try {
    writeSync(fd, JSON.stringify(m) + '\n');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOSPC') {
      throw new LayerFsError('ERR_NO_SPACE', `no space left to record the Workspace beside the Store`, { path: markerDir(storePath), hint: 'free disk space and create the Workspace again', cause: e });
    }
    throw e;
  } finally {
    closeSync(fd);
  }
}

/** The marker of a Workspace, or null when this user never created it here (or it is unreadable). */
export function readMarker(storePath: string, id: Buffer): DirMarker | null {
  let fd: number;
  try {
    fd = openPrivateFile(markerPath(storePath, id), fsc.O_RDONLY);
  } catch {
    return null;
  }
  try {
    const m = JSON.parse(readFileSync(fd, 'utf8')) as Partial<DirMarker>;
    if (typeof m.path !== 'string' || typeof m.dev !== 'number' || typeof m.ino !== 'number') return null;
    return { path: m.path, dev: m.dev, ino: m.ino, created: m.created === true };
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether `path` is the directory the Workspace recorded: same path, a directory (not a symlink)
 * with the recorded device and inode. Stat of a live FUSE mount point shows the mount's root,
 * so check only while nothing is mounted there.
 */
export function isMarkedDir(storePath: string, id: Buffer, path: string): boolean {
  const m = readMarker(storePath, id);
  if (!m || m.path !== path) return false;
  try {
    const st = lstatSync(path);
    return st.isDirectory() && st.dev === m.dev && st.ino === m.ino;
  } catch {
    return false;
  }
}

export function dropMarker(storePath: string, id: Buffer): void {
  try {
    unlinkSync(markerPath(storePath, id));
  } catch {
    /* none */
  }
}
