/**
 * Garbage collection: deletes the objects no kept state reaches, the counterpart of
 * `git gc --prune=now`. Mark walks every kept state's tree objects (pages, roots, extent
 * nodes; file content is a leaf and is never read) in one read snapshot, then adds the delta
 * bases of everything marked. Sweep deletes the rest in bounded write transactions, never an
 * object before the garbage stored against it (LiveSet.tierGarbage); before each,
 * under the write lock, the states kept *now* are walked again from where mark stopped, so an
 * object a concurrent writer reused (found stored, not written again) and published is kept.
 * Every writer stores its objects and publishes the row that reaches them in one transaction,
 * so nothing unpublished is ever visible to gc (docs/FORMAT.md "Format 4") — except content a
 * mount stored ahead of its commit, which is used only if no sweep ran since (gc-epoch.ts: each
 * sweep transaction advances the epoch). Rows left mostly
 * garbage are rewritten with repack's machinery. Any crash leaves a valid Store (each
 * transaction is whole), and running gc again finishes the work.
 */
import { LayerFsError } from '../errors.js';
import { advanceGcEpoch } from './gc-epoch.js';
import { LiveSet, Marker, type GcRoot } from './gc-live.js';
import type { StoreAccess } from './access.js';
import { rewriteRows, vacuumStore } from './repack.js';
import { mapSqliteError } from './sqlite-errors.js';

export type { GcRoot };

export interface GcProgress {
  phase: 'mark' | 'sweep' | 'commits' | 'rewrite' | 'vacuum' | 'done';
  /** Objects deleted so far, of the garbage mark found (sweep); Commit rows removed (commits); rows rewritten (rewrite). */
  done: number;
  total: number;
  transactions: number;
}

export interface GcOptions {
  /** The states to keep; called in mark's read snapshot and again under each sweep transaction's write lock. */
  roots: () => GcRoot[];
  /** Report what would be freed; change nothing. */
  dryRun?: boolean;
  /** VACUUM afterwards so the file shrinks (default false: free pages are reused by later writes). */
  vacuum?: boolean;
  /** Objects deleted per transaction (default GC_BATCH_OBJECTS). */
  batchObjects?: number;
  /** A row still holding live objects is rewritten when at least this share of it is garbage (default 0.2). */
  rewriteShare?: number;
  /** zstd level of rewritten rows (default GC_LEVEL). */
  level?: number;
  onProgress?: (p: GcProgress) => void;
  /**
   * Called once in the first deleting transaction, after re-marking, with the live test: the
   * caller records which states this gc reclaims (pruned Commits) in the same transaction.
   */
  beforeSweep?: (live: (id: Buffer) => boolean) => void;
  /**
   * The history rows nothing keeps (Commit rows of deleted Branches), removed after the sweep and
   * before rewrite and vacuum: `remove(batch)` removes at most `batch` inside a write transaction
   * gc opens for it, and returns how many (0: done); `count` answers a dry run.
   */
  commits?: { count(): number; remove(batch: number): number };
}

export interface GcStats {
  dryRun: boolean;
  /** Kept states walked. */
  states: number;
  /** Objects in the Store when mark ran, and how many of them are live. */
  objects: number;
  liveObjects: number;
  /** Objects nothing kept reaches (the dry run's "would delete"), and how many were deleted. */
  garbageObjects: number;
  deletedObjects: number;
  /** Canonical bytes of the garbage objects. */
  garbageBytes: number;
  /** Objects kept because a state published while gc ran reached them. */
  rescued: number;
  /** Commit rows nothing keeps: removed (a dry run: would be removed). */
  commitsRemoved: number;
  /** Pack rows deleted whole (nothing live left in them). */
  rowsDeleted: number;
  /** Rows rewritten because most of them was garbage, and the rows that replaced them. */
  rowsRewritten: number;
  rowsWritten: number;
  /** Stored bytes freed (whole rows, and what rewriting saved); what a dry run would free. */
  storedBytesFreed: number;
  /** Garbage bytes left inside rows below the rewrite share (reclaimed by a later gc or repack). */
  garbageBytesKept: number;
  transactions: number;
  fileBytesBefore: number;
  fileBytesAfter: number;
  /** Bytes of free pages after gc (reused by later writes; --vacuum returns them). */
  freeBytes: number;
  markMs: number;
  sweepMs: number;
  rewriteMs: number;
  vacuumMs: number;
}

/** 10,000 objects per transaction: a short hold of the write lock, and little work lost to a crash. */
export const GC_BATCH_OBJECTS = 10_000;
/** Rewritten rows are written at import-like speed: gc is routine, repack is the slow size pass. */
export const GC_LEVEL = 3;
/** Rows with less garbage than this are left as they are however large the share. */
const MIN_REWRITE_BYTES = 4096;

function fileBytes(store: StoreAccess): { file: number; free: number } {
  const db = store.db;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  return { file: pageSize * (db.pragma('page_count', { simple: true }) as number), free: pageSize * (db.pragma('freelist_count', { simple: true }) as number) };
}

interface Garbage {
  pack: number;
  id: Buffer;
  tier: number;
}

/** A pack row holding garbage at mark (or nothing at all: `orphan`). */
interface Row {
  bytes: number;
  /** Garbage objects in it not yet deleted. */
  garbage: number;
  /** Stored bytes of the frames live objects use (a frame counted once). */
  liveBytes: number;
  /** A state published while gc ran reached one of its garbage objects: the row stays. */
  rescued: boolean;
  orphan: boolean;
}

/** Runs gc (module comment). */
export async function collectGarbage(store: StoreAccess, opts: GcOptions): Promise<GcStats> {
  const db = store.db;
  if (db.readonly && !opts.dryRun) throw new LayerFsError('ERR_READ_ONLY', 'cannot collect garbage in a Store opened read-only', { path: store.path, hint: 'connect without readonly, or use --dry-run' });
  const batch = opts.batchObjects ?? GC_BATCH_OBJECTS;
  if (!(Number.isInteger(batch) && batch > 0)) throw new LayerFsError('ERR_INVALID_ARGUMENT', `gc batchObjects must be a positive integer, got ${batch}`);
  const f0 = fileBytes(store);
  const stats: GcStats = {
    dryRun: opts.dryRun ?? false, states: 0, objects: 0, liveObjects: 0, garbageObjects: 0, deletedObjects: 0, garbageBytes: 0, rescued: 0, commitsRemoved: 0,
    rowsDeleted: 0, rowsRewritten: 0, rowsWritten: 0, storedBytesFreed: 0, garbageBytesKept: 0, transactions: 0,
    fileBytesBefore: f0.file, fileBytesAfter: f0.file, freeBytes: f0.free, markMs: 0, sweepMs: 0, rewriteMs: 0, vacuumMs: 0,
  };
  const progress: GcProgress = { phase: 'mark', done: 0, total: 0, transactions: 0 };
  const report = () => opts.onProgress?.({ ...progress, transactions: stats.transactions });
  report();
  const closers: (() => void)[] = [];
  try {
    const t0 = performance.now();
    const live = new LiveSet(store);
    closers.push(() => live.close());
    const marker = new Marker(store, live);
    // data_version moves when another connection commits: a sweep transaction that finds it
    // where the last one (or mark's snapshot) left it has no new state to walk.
    const seen = { version: -1 };
    const rows = store.read(() => {
      seen.version = store.db.pragma('data_version', { simple: true }) as number;
      return mark(store, marker, opts.roots(), stats);
    });
    stats.markMs = performance.now() - t0;
    const rewrite = [...rows.entries()].filter(([, r]) => r.liveBytes > 0 && r.bytes - r.liveBytes >= Math.max(MIN_REWRITE_BYTES, (opts.rewriteShare ?? 0.2) * r.bytes));
    const rewriting = new Set(rewrite.map(([p]) => p));
    for (const [pack, r] of rows) {
      if (r.liveBytes === 0) stats.storedBytesFreed += r.bytes;
      else if (!rewriting.has(pack)) stats.garbageBytesKept += r.bytes - r.liveBytes;
    }
    if (opts.dryRun) {
      for (const [, r] of rewrite) stats.storedBytesFreed += r.bytes - r.liveBytes;
      stats.rowsDeleted = [...rows.values()].filter((r) => r.liveBytes === 0 && r.bytes > 0).length;
      stats.rowsRewritten = rewrite.length;
      stats.commitsRemoved = opts.commits?.count() ?? 0;
      return finish(store, stats, progress, report, false);
    }
    const t1 = performance.now();
    const tiers = live.tierGarbage();
    progress.phase = 'sweep';
    progress.total = stats.garbageObjects;
    report();
    await sweep(store, marker, opts, { batch, tiers }, rows, stats, seen, (n) => {
      progress.done += n;
      report();
    });
    if (opts.commits) await removeCommits(store, opts.commits, batch, stats, progress, report);
    stats.sweepMs = performance.now() - t1;
    const t2 = performance.now();
    progress.phase = 'rewrite';
    progress.done = 0;
    progress.total = rewrite.length;
    report();
    if (rewrite.length > 0) {
      const before = rewrite.reduce((n, [, r]) => n + r.bytes, 0);
      const r = await rewriteRows(store, rewrite.map(([p]) => p), { level: opts.level ?? GC_LEVEL });
      stats.rowsRewritten = r.rowsBefore;
      stats.rowsWritten = r.rowsAfter;
      stats.transactions += r.transactions;
      stats.storedBytesFreed += Math.max(0, before - r.storedBytesAfter);
      progress.done = rewrite.length;
      report();
    }
    stats.rewriteMs = performance.now() - t2;
    return finish(store, stats, progress, report, opts.vacuum ?? false);
  } catch (e) {
    throw mapSqliteError(e, store.path);
  } finally {
    store.objects.reset();
    for (const close of closers) close();
  }
}

/**
 * The sweep: gc_garbage a batch at a time, by tier and then in id order after a cursor, one
 * transaction each (LiveSet.tierGarbage: nothing is deleted before what is stored against it).
 */
async function sweep(store: StoreAccess, marker: Marker, opts: GcOptions, { batch, tiers }: { batch: number; tiers: number }, rows: Map<number, Row>, stats: GcStats, seen: { version: number }, done: (n: number) => void): Promise<void> {
  // All of tier 0 (no garbage stored against garbage): the primary key's order, as before tiers.
  const next =
    tiers > 0
      ? store.db.prepare('SELECT pack, id, tier FROM temp.gc_garbage WHERE (tier, id) > (?, ?) ORDER BY tier, id LIMIT ?')
      : store.db.prepare('SELECT pack, id, tier FROM temp.gc_garbage WHERE ? = 0 AND id > ? ORDER BY id LIMIT ?');
  let cursor: { tier: number; id: Buffer } = { tier: 0, id: Buffer.alloc(0) };
  // The first transaction runs even without garbage: it records pruned Commits and drops orphan rows.
  for (let first = true; ; first = false) {
    const items = next.all(cursor.tier, cursor.id, batch) as Garbage[];
    if (items.length === 0 && !first) break;
    sweepBatch(store, marker, opts, items, rows, stats, seen);
    if (items.length > 0) cursor = items.at(-1)!;
    done(items.length);
    // Between transactions: let this process's other work (and other writers) in.
    await new Promise((r) => setImmediate(r));
  }
}

/** The history rows nothing keeps, a bounded transaction at a time (GcOptions.commits). */
function removeBatch(store: StoreAccess, commits: NonNullable<GcOptions['commits']>, batch: number): number {
  const db = store.db;
  db.exec('BEGIN IMMEDIATE');
  try {
    const n = commits.remove(batch);
    db.exec('COMMIT');
    return n;
  } catch (e) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw e;
  }
}

async function removeCommits(store: StoreAccess, commits: NonNullable<GcOptions['commits']>, batch: number, stats: GcStats, progress: GcProgress, report: () => void): Promise<void> {
  progress.phase = 'commits';
  progress.done = 0;
  progress.total = 0;
  report();
  for (let n = removeBatch(store, commits, batch); n > 0; n = removeBatch(store, commits, batch)) {
    stats.commitsRemoved += n;
    stats.transactions++;
    progress.done += n;
    report();
    await new Promise((r) => setImmediate(r));
  }
}

function finish(store: StoreAccess, stats: GcStats, progress: GcProgress, report: () => void, vacuum: boolean): GcStats {
  if (vacuum) {
    progress.phase = 'vacuum';
    report();
    stats.vacuumMs = vacuumStore(store);
  }
  const f = fileBytes(store);
  stats.fileBytesAfter = f.file;
  stats.freeBytes = f.free;
  progress.phase = 'done';
  report();
  return stats;
}

/**
 * Mark, in one read snapshot: the live set, the garbage (into gc_garbage), and the
 * make-up of each row holding garbage, or nothing at all.
 */
function mark(store: StoreAccess, marker: Marker, roots: GcRoot[], stats: GcStats): Map<number, Row> {
  const db = store.db;
  stats.states = roots.length;
  for (const s of roots) marker.state(s);
  marker.currentDictionary();
  // Delta bases of live objects are live (and their bases, and so on).
  marker.live.addDeltaBases();
  stats.garbageObjects = db.prepare('INSERT INTO temp.gc_garbage (pack, id, size) SELECT pack, id, size FROM main.objects WHERE id NOT IN (SELECT id FROM temp.gc_live)').run().changes;
  stats.objects = db.prepare('SELECT count(*) FROM main.objects').pluck().get() as number;
  stats.liveObjects = stats.objects - stats.garbageObjects;
  stats.garbageBytes = (db.prepare('SELECT sum(size) FROM temp.gc_garbage').pluck().get() as number | null) ?? 0;
  const rows = new Map<number, Row>();
  const rowBytes = db.prepare('SELECT length(data) FROM main.packs WHERE id = ?').pluck();
  for (const r of db.prepare('SELECT pack, count(*) AS n FROM temp.gc_garbage GROUP BY pack').iterate() as IterableIterator<{ pack: number; n: number }>) {
    rows.set(r.pack, { bytes: (rowBytes.get(r.pack) as number | undefined) ?? 0, garbage: r.n, liveBytes: 0, rescued: false, orphan: false });
  }
  // Live frames of those rows: a frame several objects share counts once.
  const liveFrames = db.prepare(
    'SELECT pack, sum(length) AS n FROM (SELECT DISTINCT pack, offset, length FROM main.objects WHERE pack IN (SELECT pack FROM temp.gc_garbage) AND id IN (SELECT id FROM temp.gc_live)) GROUP BY pack',
  );
  for (const r of liveFrames.iterate() as IterableIterator<{ pack: number; n: number }>) rows.get(r.pack)!.liveBytes = r.n;
  // Rows nothing points into (a crash between a batch's deletes and its row's): garbage too.
  const orphans = db.prepare('SELECT id, length(data) AS n FROM main.packs WHERE length(data) > 0 AND id NOT IN (SELECT pack FROM main.objects)');
  for (const r of orphans.iterate() as IterableIterator<{ id: number; n: number }>) rows.set(r.id, { bytes: r.n, garbage: 0, liveBytes: 0, rescued: false, orphan: true });
  return rows;
}

/**
 * One sweep transaction: under the write lock, walk whatever kept state mark has not seen (a
 * Commit or import published since), keep the bases of what that adds, then delete this batch's
 * garbage that is still garbage, and the rows left empty.
 */
function sweepBatch(store: StoreAccess, marker: Marker, opts: GcOptions, items: Garbage[], rows: Map<number, Row>, stats: GcStats, seen: { version: number }): void {
  const db = store.db;
  const del = db.prepare('DELETE FROM main.objects WHERE id = ?');
  db.exec('BEGIN IMMEDIATE');
  try {
    // Before any deletion: content stored unpublished before now is no longer trusted (gc-epoch.ts).
    advanceGcEpoch(db);
    const version = db.pragma('data_version', { simple: true }) as number;
    if (version !== seen.version) {
      marker.tracking = true;
      for (const s of opts.roots()) if (!marker.walkedRoot(s.rootId)) marker.state(s);
      marker.currentDictionary();
      marker.markFreshBases();
      seen.version = version;
    }
    if (stats.transactions === 0) opts.beforeSweep?.((id) => marker.live.has(id));
    const touched = new Set<number>();
    for (const g of items) {
      const row = rows.get(g.pack);
      if (marker.live.has(g.id)) {
        stats.rescued++;
        if (row) row.rescued = true;
        continue;
      }
      stats.deletedObjects += del.run(g.id).changes;
      if (row) {
        row.garbage--;
        touched.add(g.pack);
      }
    }
    for (const pack of touched) {
      const row = rows.get(pack)!;
      if (row.liveBytes === 0 && row.garbage === 0 && !row.rescued) dropRow(store, pack, stats);
    }
    if (stats.transactions === 0) for (const [pack, row] of rows) if (row.orphan) dropRow(store, pack, stats);
    db.exec('COMMIT');
    stats.transactions++;
  } catch (e) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw e;
  }
}

/**
 * Deletes an empty pack row. The highest row is emptied instead of deleted: SQLite would give
 * its id to the next row written, and readers cache frames by row id.
 */
function dropRow(store: StoreAccess, pack: number, stats: GcStats): void {
  const db = store.db;
  const max = db.prepare('SELECT max(id) FROM packs').pluck().get() as number | null;
  if (pack === max) db.prepare("UPDATE packs SET data = x'' WHERE id = ?").run(pack);
  else db.prepare('DELETE FROM packs WHERE id = ?').run(pack);
  stats.rowsDeleted++;
}
