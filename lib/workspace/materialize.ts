/**
 * Materialize projection: writes a state into the Workspace directory and records the stat
 * cache that later commits compare against.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { LayerFsError } from '../errors.js';
import { walkName, walkTreeSync } from '../native/walk.js';
import { exportTree, ROOT_SERIAL, type ExportProgress, type Store } from '../store/index.js';
import type { StatCache } from './cache.js';
import { compactWalk } from './changes.js';
import { racyWaitMs } from './record.js';
import { removeTree } from '../store/index.js';

/** Writes `rootId` into `dir` (absent or empty) and returns the stat cache for it. */
export function materialize(store: Store, rootId: Buffer, dir: string, onProgress?: (p: ExportProgress) => void): StatCache {
  const abs = resolve(dir);
  const keepRoot = existsSync(abs);
  // (parent serial, name) → serial of every entry written.
  const written = new Map<string, number>();
  let maxSerial = ROOT_SERIAL;
  try {
    store.read(() =>
      exportTree(store.view(rootId), abs, {
        onEntry: (rel, serial, parentSerial) => {
          if (rel.length === 0) return;
          written.set(`${parentSerial}/${rel.toString('latin1', rel.lastIndexOf(0x2f) + 1)}`, serial);
          if (serial > maxSerial) maxSerial = serial;
        },
        onProgress,
      }),
    );
  } catch (e) {
    if (!(e instanceof LayerFsError && (e.code === 'ERR_NOT_EMPTY' || e.code === 'ERR_NOT_A_DIRECTORY'))) removeProjection(abs, { keepRoot });
    throw e;
  }
  // Stat after everything is written: directory mtimes are restored last.
  let walk;
  try {
    walk = walkTreeSync(abs);
  } catch (e) {
    removeProjection(abs, { keepRoot });
    throw e;
  }
  waitPastTickSync(walk.ctimeNs);
  const serial = new Uint32Array(walk.count);
  serial[0] = ROOT_SERIAL;
  let foreign = false;
  for (let i = 1; i < walk.count; i++) {
    const s = written.get(`${serial[walk.parent[i]!]}/${walkName(walk, i).toString('latin1')}`);
    if (s === undefined) foreign = true;
    else serial[i] = s;
  }
  if (!foreign) return { ...walk, serial, maxSerial };
  // Something appeared that the state does not hold (another process wrote into the directory):
  // leave it out of the cache, so the next commit sees it as new.
  const keep = new Uint8Array(walk.count);
  for (let i = 0; i < walk.count; i++) keep[i] = serial[i] === 0 ? 0 : 1;
  const { walk: kept, from } = compactWalk(walk, keep);
  return { ...kept, serial: Uint32Array.from(from, (i) => serial[i]!), maxSerial };
}

/**
 * Returns once the clock is a timestamp tick past the newest ctime: a write into the Workspace
 * after create returns then changes the stat the cache records (record.ts, racy edits).
 */
export function waitPastTickSync(ctimeNs: BigInt64Array): void {
  let newest = 0n;
  for (const c of ctimeNs) if (c > newest) newest = c;
  const ms = racyWaitMs(newest, Date.now());
  if (ms > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Removal progress: top-level entries of the Workspace removed so far. */
export interface RemoveProgress {
  done: number;
  total: number;
}

/**
 * Removes a Workspace directory (with keepRoot: only what is in it, leaving the directory the
 * user had made); never follows symlinks out of it, and iterative at any depth. With
 * `onProgress`, entry by top-level entry, so a large tree shows that it moves.
 */
export function removeProjection(dir: string, opts: { keepRoot?: boolean; onProgress?: (p: RemoveProgress) => void } = {}): void {
  const abs = resolve(dir);
  if (abs === '/' || abs === resolve(join(abs, '..'))) throw new LayerFsError('ERR_UNSAFE_PATH', `refusing to remove ${abs}`, { path: abs });
  if (!opts.keepRoot && !opts.onProgress) return removeTree(abs);
  let names: Buffer[];
  try {
    names = readdirSync(abs, { encoding: 'buffer' });
  } catch {
    return;
  }
  names.forEach((n, i) => {
    removeTree(Buffer.concat([Buffer.from(`${abs}/`), n]));
    opts.onProgress?.({ done: i + 1, total: names.length });
  });
  if (!opts.keepRoot) removeTree(abs);
}
