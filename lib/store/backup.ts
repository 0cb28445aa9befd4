/**
 * Online backup through SQLite's backup API: the copy is one consistent snapshot of the Store,
 * taken while other connections and processes go on reading and writing (in WAL mode a backup
 * step holds only a read snapshot). The first step learns the size; the second copies every
 * page in one step, so writers committing meanwhile can never make it restart. The copy is
 * written under a temporary name, switched to a self-contained single file (no -wal), and
 * only put in place — without replacing anything — once the caller has verified it.
 */
import { closeSync, fsyncSync, linkSync, openSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { LayerFsError } from '../errors.js';
import type { Store } from './store.js';

export interface BackupProgress {
  totalPages: number;
  remainingPages: number;
}

export interface BackupCopy {
  /** The verified-later copy, under its temporary name. */
  tmp: string;
  dest: string;
  pages: number;
  bytes: number;
}

function exists(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}

/** Copies the Store to a temporary file beside `dest`. */
export async function copyStore(store: Store, dest: string, onProgress?: (p: BackupProgress) => void): Promise<BackupCopy> {
  const abs = resolve(dest);
  if (store.files.includes(abs)) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'the backup path is the Store itself', { path: abs });
  if (exists(abs)) throw new LayerFsError('ERR_EXISTS', `${abs} already exists`, { path: abs, hint: 'back up to a new path' });
  if (!exists(dirname(abs))) throw new LayerFsError('ERR_NOT_FOUND', `no directory ${dirname(abs)}`, { path: dirname(abs) });
  const tmp = `${abs}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  let pages = 0;
  try {
    const r = await store.db.backup(tmp, {
      progress: (p) => {
        pages = p.totalPages;
        onProgress?.(p);
        // Everything left in one step: one read snapshot, so concurrent commits cannot restart it.
        return 0x7fffffff;
      },
    });
    pages = r.totalPages;
    const copy = new Database(tmp);
    try {
      copy.pragma('journal_mode = DELETE');
    } finally {
      copy.close();
    }
    const fd = openSync(tmp, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    rmSync(tmp, { force: true });
    rmSync(`${tmp}-journal`, { force: true });
    if (e instanceof LayerFsError) throw e;
    throw new LayerFsError('ERR_NATIVE_IO', `backup to ${abs} failed: ${(e as Error).message}`, { path: abs });
  }
  onProgress?.({ totalPages: pages, remainingPages: 0 });
  return { tmp, dest: abs, pages, bytes: statSync(tmp).size };
}

/** Puts a verified copy in place; refuses (ERR_EXISTS) if something appeared at `dest` meanwhile. */
export function publishCopy(copy: BackupCopy): void {
  try {
    linkSync(copy.tmp, copy.dest);
  } catch (e) {
    discardCopy(copy);
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new LayerFsError('ERR_EXISTS', `${copy.dest} already exists`, { path: copy.dest });
    throw e;
  }
  unlinkSync(copy.tmp);
  const dir = openSync(dirname(copy.dest), 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

export function discardCopy(copy: BackupCopy): void {
  for (const suffix of ['', '-journal', '-wal', '-shm']) rmSync(copy.tmp + suffix, { force: true });
}
