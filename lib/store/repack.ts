/**
 * Repack: an offline-quality rewrite of the Store's physical form for size, the counterpart of
 * `git gc --aggressive`. The import writes at import speed (zstd level 2, 32 KiB content
 * groups); repack re-encodes every pack row that existed when it started with a slow level and
 * larger content groups (docs/DESIGN.md "Repack"). Only physical choices change: ids, kinds,
 * sizes and delta bases stay, so every reader of the format decodes the result as before.
 */
import { LayerFsError } from '../errors.js';
import type { StoreAccess as Store } from './access.js';
import { rewriteBatch, type BatchOptions } from './repack-batch.js';
import { repackDictionary } from './repack-dict.js';
import { selectBases, selectionItems, type Selection } from './repack-bases.js';
import type { Dictionary } from './dictionary.js';
import { loadRecord, recorded, recordRows } from './repack-record.js';
import type { Planned } from './repack-rows.js';
import { FORMAT_VERSION } from './schema.js';
import { mapSqliteError } from './sqlite-errors.js';

/**
 * Level 19: on the 10,000-file fixture's text it stored 0.309× in 128 KiB groups against the
 * import's 0.360× (level 2, 32 KiB); it compresses at ~2.5 MB/s, which only an offline pass can
 * afford. Readers decode any level.
 */
export const REPACK_LEVEL = 19;
export { REPACK_GROUP_MAX } from './repack-batch.js';
/** Objects whose index rows a repack holds at a time (~150 bytes each): bounds its memory on large Stores. */
export const REPACK_PLAN_OBJECTS = 250_000;
/** Canonical bytes of old rows rewritten per transaction: bounds the work a crash can lose and the write lock's hold. */
export const REPACK_BATCH_BYTES = 8 * 1024 * 1024;

export interface RepackProgress {
  phase: 'rewrite' | 'vacuum' | 'done';
  /** Old pack rows rewritten so far, of rowsTotal (the rows that existed when repack started). */
  rowsDone: number;
  rowsTotal: number;
  /** Stored bytes of the old rows rewritten so far, and of the rows that replaced them. */
  bytesBefore: number;
  bytesAfter: number;
}

export interface RepackOptions {
  /** zstd level of content and tree groups and chunk frames (1–22, default REPACK_LEVEL). */
  level?: number;
  /** Canonical bytes per transaction (default REPACK_BATCH_BYTES). */
  batchBytes?: number;
  /** Objects planned at a time (default REPACK_PLAN_OBJECTS): the index rows a repack holds in memory. */
  planObjects?: number;
  /** VACUUM afterwards so the file shrinks (default true). */
  vacuum?: boolean;
  /**
   * Rewrite rows an earlier repack wrote too (default: they are skipped unless `level` is
   * higher than theirs; repack-record.ts).
   */
  full?: boolean;
  /**
   * Train a zstd dictionary on the Store's small objects and compress content groups with it
   * (default true; format 10, repack-dict.ts).
   */
  dictionary?: boolean;
  /** Re-encode delta chains longer than one link against their full object (default true; repack-flatten.ts). */
  flatten?: boolean;
  /**
   * Undo a transaction whose new rows would take more bytes than the old rows and keep those
   * (default true: a repack never grows the Store). False lets flattening trade bytes for
   * shorter chains even where the transaction grows.
   */
  neverGrow?: boolean;
  /**
   * Choose delta bases for small files the way git's pack heuristics do: the same path's other
   * versions, then a window of files sorted by name and size (default true; repack-bases.ts).
   */
  select?: boolean;
  onProgress?: (p: RepackProgress) => void;
}

export interface RepackStats {
  level: number;
  rowsBefore: number;
  rowsAfter: number;
  /** Rows an earlier repack wrote at this level or higher, left as they are. */
  rowsSkipped: number;
  /** Rows kept as they were because their rewrite came out larger (repack-batch.ts), and their objects. */
  rowsKept: number;
  objectsKept: number;
  objects: number;
  /** Objects planned but moved by someone else (another repack) before their batch ran. */
  skipped: number;
  transactions: number;
  storedBytesBefore: number;
  storedBytesAfter: number;
  fileBytesBefore: number;
  fileBytesAfter: number;
  rewriteMs: number;
  vacuumMs: number;
  /** Deltas re-encoded against the full object their chain ends at, and deltas that did not pay so and were stored whole. */
  flattened: number;
  madeWhole: number;
  /** Bytes of the dictionary content groups were compressed with (0: none). */
  dictionaryBytes: number;
  /** Small files the base selection planned as deltas, those written so, and the ms the selection took. */
  planned: number;
  selected: number;
  selectMs: number;
}

function fileBytes(store: Store): number {
  const pageSize = store.db.pragma('page_size', { simple: true }) as number;
  const pages = store.db.pragma('page_count', { simple: true }) as number;
  return pageSize * pages;
}

/** The repack level and batch size `opts` ask for; anything out of range is ERR_INVALID_ARGUMENT. */
function repackSettings(opts: RepackOptions): { level: number; batchBytes: number } {
  const level = opts.level ?? REPACK_LEVEL;
  if (!Number.isInteger(level) || level < 1 || level > 22) throw new LayerFsError('ERR_INVALID_ARGUMENT', `repack level must be an integer from 1 to 22, got ${level}`);
  const batchBytes = opts.batchBytes ?? REPACK_BATCH_BYTES;
  if (opts.planObjects !== undefined && !(Number.isInteger(opts.planObjects) && opts.planObjects > 0)) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `repack planObjects must be a positive integer, got ${opts.planObjects}`);
  }
  if (!(batchBytes > 0)) throw new LayerFsError('ERR_INVALID_ARGUMENT', `repack batchBytes must be positive, got ${batchBytes}`);
  return { level, batchBytes };
}

/** A repack writes rows in the current format only, so the Store must be writable and current. */
function assertRepackable(store: Store): void {
  const db = store.db;
  if (db.readonly) throw new LayerFsError('ERR_READ_ONLY', 'cannot repack a Store opened read-only', { path: store.path, hint: 'connect without readonly' });
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version !== FORMAT_VERSION) {
    throw new LayerFsError('ERR_UNSUPPORTED_FORMAT', `repack writes format ${FORMAT_VERSION}; this Store is format ${version}`, { path: store.path, formatVersion: version, hint: 'upgrade layerfs' });
  }
}

function emptyStats(level: number, fileBytesBefore: number): RepackStats {
  return {
    level, rowsBefore: 0, rowsAfter: 0, rowsSkipped: 0, rowsKept: 0, objectsKept: 0, objects: 0, skipped: 0, transactions: 0,
    storedBytesBefore: 0, storedBytesAfter: 0, fileBytesBefore, fileBytesAfter: 0, rewriteMs: 0, vacuumMs: 0, flattened: 0, madeWhole: 0, dictionaryBytes: 0, planned: 0, selected: 0, selectMs: 0,
  };
}

type RowCount = { pack: number; n: number };

/**
 * One snapshot of what to rewrite: rows written later (by anyone, repack included) get higher
 * ids and are left as they are; the objects of an old row never change except by a repack,
 * which each batch re-checks under the write lock. The snapshot keeps one count per row; the
 * rows' objects are loaded a window of rows at a time (one scan of the index each, since
 * `objects` is keyed by id), so memory follows planObjects, not the Store's size.
 */
function snapshotRows(store: Store, level: number, full: boolean | undefined, stats: RepackStats) {
  const db = store.db;
  return store.read(() => {
    const record = loadRecord(db);
    const skip = !full && record && level <= record.level ? record : undefined;
    const maxPack = (db.prepare('SELECT max(id) FROM packs').pluck().get() as number | null) ?? 0;
    stats.rowsSkipped = skip ? (db.prepare('SELECT id FROM packs WHERE id <= ?').pluck().all(maxPack) as number[]).filter((id) => recorded(skip, id)).length : 0;
    const counts = db.prepare('SELECT pack, count(*) AS n FROM objects WHERE pack <= ? GROUP BY pack ORDER BY pack').all(maxPack) as RowCount[];
    return { rows: counts.filter((r) => !recorded(skip, r.pack)), record, skip, maxPack };
  });
}

/** End of the window of rows from `w` that holds about planObjects objects (at least one row). */
function windowEnd(rows: RowCount[], w: number, planObjects: number): number {
  let end = w;
  for (let n = 0; end < rows.length && (end === w || n + rows[end]!.n <= planObjects); end++) n += rows[end]!.n;
  return end;
}

/** End of the batch of planned rows from `i` that holds about batchBytes canonical bytes. */
function batchEnd(plan: [number, Planned[]][], i: number, batchBytes: number): number {
  let j = i;
  let bytes = 0;
  while (j < plan.length && (j === i || bytes < batchBytes)) bytes += plan[j++]![1].reduce((n, p) => n + p.size, 0);
  return j;
}

interface RewritePass {
  rows: RowCount[];
  /** The first batch replaces the existing record rather than adding to it. */
  replaceRecord: boolean;
  level: number;
  batchBytes: number;
  planObjects: number;
  batch: BatchOptions;
  stats: RepackStats;
  progress: RepackProgress;
  onProgress: RepackOptions['onProgress'];
}

/** Rewrites the snapshot's rows, a window of rows planned at a time, one transaction a batch. */
async function rewriteRowWindows(store: Store, pass: RewritePass): Promise<void> {
  const { rows, progress, onProgress } = pass;
  let fresh = pass.replaceRecord;
  for (let w = 0; w < rows.length; ) {
    const end = windowEnd(rows, w, pass.planObjects);
    const plan = planWindow(store, rows.slice(w, end));
    w = end;
    for (let i = 0; i < plan.length; ) {
      const j = batchEnd(plan, i, pass.batchBytes);
      const replace = fresh;
      fresh = false;
      rewriteBatch(store, plan.slice(i, j), pass.batch, pass.stats, progress, (ids) => recordRows(store.db, pass.level, ids, replace));
      progress.rowsDone += j - i;
      onProgress?.({ ...progress });
      i = j;
      // Between transactions: let the event loop (and so this process's other work) run.
      await new Promise((r) => setImmediate(r));
    }
    // Rows a concurrent repack emptied since the snapshot count as done too.
    progress.rowsDone = w;
  }
}

/** Rewrites the Store's pack rows for size (module comment); returns what it did. */
export async function repackStore(store: Store, opts: RepackOptions = {}): Promise<RepackStats> {
  const { level, batchBytes } = repackSettings(opts);
  assertRepackable(store);
  const db = store.db;
  const t0 = performance.now();
  const stats = emptyStats(level, fileBytes(store));
  try {
    const { rows, record, skip, maxPack } = snapshotRows(store, level, opts.full, stats);
    const progress: RepackProgress = { phase: 'rewrite', rowsDone: 0, rowsTotal: rows.length, bytesBefore: 0, bytesAfter: 0 };
    stats.rowsBefore = rows.length;
    opts.onProgress?.({ ...progress });
    const dict = rows.length > 0 && (opts.dictionary ?? true) ? repackDictionary(store) : undefined;
    stats.dictionaryBytes = dict?.bytes.length ?? 0;
    const selection = rows.length > 0 && (opts.select ?? true) ? planSelection(store, rows, maxPack, dict, stats) : undefined;
    await rewriteRowWindows(store, {
      rows, level, batchBytes, stats, progress,
      // A rewrite that skips an existing record (a higher level, or full) replaces it; otherwise
      // rows are added to what is there (a concurrent repack's too).
      replaceRecord: !skip && record !== undefined,
      planObjects: opts.planObjects ?? REPACK_PLAN_OBJECTS,
      batch: { level, dict, flatten: opts.flatten ?? true, selection, neverGrow: opts.neverGrow ?? true },
      onProgress: opts.onProgress,
    });
    store.objects.reset();
    stats.rewriteMs = performance.now() - t0;
    // Nothing rewritten and no free pages: a VACUUM would copy the whole file for nothing.
    const free = db.pragma('freelist_count', { simple: true }) as number;
    if ((opts.vacuum ?? true) && (stats.rowsBefore > 0 || free > 0)) {
      progress.phase = 'vacuum';
      opts.onProgress?.({ ...progress });
      stats.vacuumMs = vacuumStore(store);
    }
    stats.fileBytesAfter = fileBytes(store);
    progress.phase = 'done';
    opts.onProgress?.({ ...progress });
    return stats;
  } catch (e) {
    throw mapSqliteError(e, store.path);
  }
}

/**
 * Rewrites the given pack rows (their objects as they are now) into new rows at `level`, in
 * transactions of about `batchBytes` canonical bytes: gc's reclaim of rows that are partly
 * garbage. Same machinery and guarantees as a repack; the rows are not added to its record.
 */
export async function rewriteRows(store: Store, packs: number[], opts: { level: number; batchBytes?: number; planObjects?: number }): Promise<Pick<RepackStats, 'rowsBefore' | 'rowsAfter' | 'objects' | 'transactions' | 'storedBytesBefore' | 'storedBytesAfter'>> {
  const stats: RepackStats = {
    level: opts.level, rowsBefore: 0, rowsAfter: 0, rowsSkipped: 0, rowsKept: 0, objectsKept: 0, objects: 0, skipped: 0, transactions: 0,
    storedBytesBefore: 0, storedBytesAfter: 0, fileBytesBefore: 0, fileBytesAfter: 0, rewriteMs: 0, vacuumMs: 0, flattened: 0, madeWhole: 0, dictionaryBytes: 0,
    planned: 0, selected: 0, selectMs: 0,
  };
  const progress: RepackProgress = { phase: 'rewrite', rowsDone: 0, rowsTotal: packs.length, bytesBefore: 0, bytesAfter: 0 };
  const batchBytes = opts.batchBytes ?? REPACK_BATCH_BYTES;
  const sorted = [...packs].sort((a, b) => a - b);
  const window = Math.max(1, Math.floor((opts.planObjects ?? REPACK_PLAN_OBJECTS) / 64));
  for (let w = 0; w < sorted.length; w += window) {
    const plan = planWindow(store, sorted.slice(w, w + window).map((pack) => ({ pack })));
    for (let i = 0; i < plan.length; ) {
      let j = i;
      let bytes = 0;
      while (j < plan.length && (j === i || bytes < batchBytes)) bytes += plan[j++]![1].reduce((n, p) => n + p.size, 0);
      rewriteBatch(store, plan.slice(i, j), { level: opts.level, flatten: false, neverGrow: false }, stats, progress, () => {});
      stats.rowsBefore += j - i;
      i = j;
      await new Promise((r) => setImmediate(r));
    }
  }
  store.objects.reset();
  return stats;
}

/** The base selection for the small files of `rows` (repack-bases.ts). */
function planSelection(store: Store, rows: RowCount[], maxPack: number, dict: Dictionary | undefined, stats: RepackStats): Selection {
  const packs = new Set(rows.map((r) => r.pack));
  const selection = selectBases(store, selectionItems(store, maxPack, (pack) => packs.has(pack)), dict);
  stats.planned = selection.planned;
  stats.selectMs = selection.ms;
  return selection;
}

/** VACUUMs the Store so free pages go back to the file system; returns the ms it took. */
export function vacuumStore(store: Store): number {
  const db = store.db;
  const tv = performance.now();
  // VACUUM is one transaction (all or nothing) that builds a copy of the live pages in a
  // temporary database and writes it back through the WAL; the checkpoint then lets the file
  // and the WAL shrink. The Store's temp_store=MEMORY would hold that copy in RAM (the
  // 100,000-file Store's repack peaked at 557 MiB RSS), so it goes to a temporary file.
  db.pragma('temp_store = FILE');
  try {
    db.exec('VACUUM');
  } finally {
    db.pragma('temp_store = MEMORY');
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  return performance.now() - tv;
}

/** The objects of `rows` (consecutive old rows of the snapshot), by row, in each row's order. */
function planWindow(store: Store, rows: { pack: number }[]): [number, Planned[]][] {
  if (rows.length === 0) return [];
  const wanted = new Set(rows.map((r) => r.pack));
  return store.read(() => {
    const byPack = new Map<number, Planned[]>();
    const q = store.db.prepare('SELECT id, kind, size, codec, pack, offset, length, at, base FROM objects WHERE pack BETWEEN ? AND ?');
    for (const r of q.iterate(rows[0]!.pack, rows.at(-1)!.pack) as IterableIterator<Planned>) {
      if (!wanted.has(r.pack)) continue;
      let l = byPack.get(r.pack);
      if (!l) byPack.set(r.pack, (l = []));
      l.push(r);
    }
    for (const l of byPack.values()) l.sort((a, b) => a.offset - b.offset || a.at - b.at);
    return [...byPack.entries()].sort((a, b) => a[0] - b[0]);
  });
}
