/**
 * Tar and backup for the Client: a state streamed as tar in sink-sized pieces, a LayerStack
 * from a tar extracted beside the Store, and an online backup verified before it is put in
 * place. client.ts only delegates here.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { copyStore, discardCopy, publishCopy, type BackupProgress } from '../store/backup.js';
import { extractTar, type TarSource } from '../store/import/tar-extract.js';
import { tarStream, type TarStats } from '../store/tar.js';
import type { FsView } from '../store/tree/view.js';
import type { Store } from '../store/store.js';
import type { VerifyResult } from './types.js';

const SINK_PIECE = 64 * 1024;

/** Streams a view as tar to `sink` in pieces of about 64 KiB. */
export async function streamTar(view: FsView, sink: (piece: Buffer) => void | Promise<void>): Promise<TarStats & { ms: number }> {
  const t0 = performance.now();
  const stats: TarStats = { files: 0, directories: 0, symlinks: 0, specials: 0, hardLinks: 0, bytes: 0 };
  let held: Buffer[] = [];
  let heldBytes = 0;
  for (const piece of tarStream(view, stats)) {
    held.push(piece);
    heldBytes += piece.length;
    if (heldBytes >= SINK_PIECE) {
      await sink(Buffer.concat(held));
      held = [];
      heldBytes = 0;
    }
  }
  if (heldBytes) await sink(Buffer.concat(held));
  return { ...stats, ms: performance.now() - t0 };
}

/** Extracts a tar into a private directory beside the Store, runs `use` on it, removes it. */
export async function withExtractedTar<T>(store: Store, tar: TarSource, use: (dir: string) => Promise<T>): Promise<T> {
  const tmp = `${store.path}.d/tar-${process.pid}-${randomBytes(4).toString('hex')}`;
  mkdirSync(tmp, { recursive: true, mode: 0o700 });
  try {
    await extractTar(tar, tmp);
    return await use(tmp);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

export interface VerifiedBackup {
  path: string;
  pages: number;
  fileBytes: number;
  copyMs: number;
  verifyMs: number;
  verify: VerifyResult;
}

/** Copies the Store, verifies the copy with `verify` (given its temporary path), then puts it in place. */
export async function verifiedBackup(store: Store, dest: string, verify: (path: string) => VerifyResult, onProgress?: (p: BackupProgress) => void): Promise<VerifiedBackup> {
  const t0 = performance.now();
  const copy = await copyStore(store, dest, onProgress);
  const copyMs = performance.now() - t0;
  let v: VerifyResult;
  try {
    v = verify(copy.tmp);
    rmSync(`${copy.tmp}.d`, { recursive: true, force: true });
  } catch (e) {
    discardCopy(copy);
    throw e;
  }
  if (!v.ok) {
    discardCopy(copy);
    throw new LayerFsError('ERR_CORRUPT', `the backup failed verification: ${v.damaged.length} damaged objects, sqlite ${v.sqliteCheck}`, { path: copy.dest, hint: 'run `layerfs verify` on the Store' });
  }
  publishCopy(copy);
  return { path: copy.dest, pages: copy.pages, fileBytes: copy.bytes, copyMs, verifyMs: performance.now() - t0 - copyMs, verify: v };
}
