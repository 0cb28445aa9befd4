/**
 * Materialize projection: writes a state into the Workspace directory and records the stat
 * cache that later commits compare against.
 */
import { lstatSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { LayerFsError } from '../errors.js';
import { exportTree, type Store } from '../store/index.js';
import type { CacheRow, CacheUpdate } from './cache.js';
import { signatureOf } from './changes.js';

/** Writes `rootId` into `dir` (absent or empty) and returns the cache rows for it. */
export function materialize(store: Store, rootId: Buffer, dir: string): CacheUpdate[] {
  const abs = resolve(dir);
  const written: { rel: Buffer; serial: number; parentSerial: number }[] = [];
  try {
    store.read(() => exportTree(store.view(rootId), abs, { onEntry: (rel, serial, parentSerial) => written.push({ rel: Buffer.from(rel), serial, parentSerial }) }));
  } catch (e) {
    if (!(e instanceof LayerFsError && (e.code === 'ERR_NOT_EMPTY' || e.code === 'ERR_NOT_A_DIRECTORY'))) removeProjection(abs);
    throw e;
  }
  // Stat after everything is written: directory mtimes are restored last.
  return written.map(({ rel, serial, parentSerial }): CacheUpdate => {
    const st = lstatSync(rel.length ? Buffer.concat([Buffer.from(abs + '/'), rel]) : abs, { bigint: true });
    const row: CacheRow = { serial, parentSerial, ino: st.ino.toString(), sig: signatureOf(st) };
    return { path: rel, row };
  });
}

/** Removes a Workspace directory; never follows symlinks out of it. */
export function removeProjection(dir: string): void {
  const abs = resolve(dir);
  if (abs === '/' || abs === resolve(join(abs, '..'))) throw new LayerFsError('ERR_UNSAFE_PATH', `refusing to remove ${abs}`, { path: abs });
  rmSync(abs, { recursive: true, force: true });
}
