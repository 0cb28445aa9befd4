/**
 * Garbage collection: deletes the objects no kept state reaches, the counterpart of
 * `git gc --prune=now`. Mark walks every kept state's tree objects (pages, roots, extent
 * nodes; file content is a leaf and is never read) in one read snapshot, then adds the delta
 * bases of everything marked. Sweep deletes the rest in bounded write transactions; before each,
 * under the write lock, the states kept *now* are walked again from where mark stopped, so an
 * object a concurrent writer reused (found stored, not written again) and published is kept.
 * Every writer stores its objects and publishes the row that reaches them in one transaction,
 * so nothing unpublished is ever visible to gc (docs/FORMAT.md "Format 4"). Rows left mostly
 * garbage are rewritten with repack's machinery. Any crash leaves a valid Store (each
 * transaction is whole), and running gc again finishes the work.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { Store } from './handle.js';
import { ObjectKind } from './objects.js';
import { rewriteRows, vacuumStore } from './repack.js';
import { mapSqliteError } from './sqlite-errors.js';
import { decodeExtentNode } from './tree/extents.js';
import { ContentForm, decodeInode, InodeKind } from './tree/inode.js';
import { decodeNode, TreeKind } from './tree/pages.js';
import { decodeRoot } from './tree/root.js';

/** A state gc keeps, and the root it walks from. */
export interface GcRoot {
  kind: string;
  id: string;
  rootId: Buffer;
}

export interface GcProgress {
  phase: 'mark' | 'sweep' | 'rewrite' | 'vacuum' | 'done';
  /** Objects deleted so far, of the garbage mark found (sweep); rows rewritten (rewrite). */
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

const keyOf = (id: Buffer): string => id.toString('latin1');

/** The live set: everything the kept states reach, walked once per subtree. */
class Marker {
  readonly live = new Set<string>();
  /** Tree objects whose whole subtree is in `live` (an object kept only as a delta base is not). */
  private readonly walked = new Set<string>();
  /** Objects marked since the last takeFresh(): their delta bases are still to be marked. */
  private fresh: Buffer[] = [];

  constructor(private readonly store: Store) {}

  walkedRoot(id: Buffer): boolean {
    return this.walked.has(keyOf(id));
  }

  takeFresh(): Buffer[] {
    const f = this.fresh;
    this.fresh = [];
    return f;
  }

  mark(id: Buffer): boolean {
    const k = keyOf(id);
    if (this.live.has(k)) return false;
    this.live.add(k);
    this.fresh.push(id);
    return true;
  }

  state(s: GcRoot): void {
    this.tree(s.rootId, ObjectKind.Root, (data) => this.page(TreeKind.Inodes, decodeRoot(data, `root ${toHex(s.rootId)}`).inodes), `${s.kind} ${s.id}`);
  }

  private tree(id: Buffer, kind: ObjectKind, visit: (data: Buffer) => void, what?: string): void {
    const k = keyOf(id);
    if (this.walked.has(k)) return;
    let data: Buffer;
    try {
      data = this.store.objects.get(id, kind);
    } catch (e) {
      if (!(e instanceof LayerFsError)) throw e;
      // Unreadable means unknown reach: deleting anything could lose what it names.
      throw new LayerFsError('ERR_CORRUPT', `gc cannot read ${what ?? `object ${toHex(id)}`} (${e.message}); nothing was deleted by this step`, {
        id: toHex(id),
        path: this.store.path,
        hint: 'run layerfs verify',
      });
    }
    visit(data);
    this.mark(id);
    this.walked.add(k);
  }

  private page(kind: TreeKind, id: Buffer): void {
    this.tree(id, ObjectKind.Page, (data) => {
      const node = decodeNode(kind, data, `page ${toHex(id)}`);
      if (node.level > 0) {
        for (const c of node.vals) this.page(kind, c);
        return;
      }
      if (kind === TreeKind.Directory) return;
      node.keys.forEach((k, i) => {
        const inode = decodeInode(node.vals[i]!, Number(k.readBigUInt64BE(0)));
        if (inode.form === ContentForm.None) return;
        if (inode.kind === InodeKind.Dir) this.page(TreeKind.Directory, inode.content!);
        else if (inode.form === ContentForm.Whole) this.mark(inode.content!);
        else this.extents(inode.content!);
      });
    });
  }

  private extents(id: Buffer): void {
    this.tree(id, ObjectKind.Extents, (data) => {
      const node = decodeExtentNode(data, `extent node ${toHex(id)}`);
      for (const c of node.ids) {
        if (node.level === 0) this.mark(c);
        else this.extents(c);
      }
    });
  }
}

function splitBases(base: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o + 32 <= base.length; o += 32) out.push(base.subarray(o, o + 32));
  return out;
}

function fileBytes(store: Store): { file: number; free: number } {
  const db = store.db;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  return { file: pageSize * (db.pragma('page_count', { simple: true }) as number), free: pageSize * (db.pragma('freelist_count', { simple: true }) as number) };
}

interface Garbage {
  id: Buffer;
  pack: number;
}

interface Row {
  bytes: number;
  /** Objects in the row at mark, and garbage among them not yet deleted. */
  objects: number;
  garbage: number;
  /** Stored bytes of the frames live objects use (a frame counted once). */
  liveBytes: number;
  frames: Set<number>;
  /** A state published while gc ran reached one of its garbage objects: the row stays. */
  rescued: boolean;
}

/** Runs gc (module comment). */
export async function collectGarbage(store: Store, opts: GcOptions): Promise<GcStats> {
  const db = store.db;
  if (db.readonly && !opts.dryRun) throw new LayerFsError('ERR_READ_ONLY', 'cannot collect garbage in a Store opened read-only', { path: store.path, hint: 'connect without readonly, or use --dry-run' });
  const batch = opts.batchObjects ?? GC_BATCH_OBJECTS;
  if (!(Number.isInteger(batch) && batch > 0)) throw new LayerFsError('ERR_INVALID_ARGUMENT', `gc batchObjects must be a positive integer, got ${batch}`);
  const f0 = fileBytes(store);
  const stats: GcStats = {
    dryRun: opts.dryRun ?? false, states: 0, objects: 0, liveObjects: 0, garbageObjects: 0, deletedObjects: 0, garbageBytes: 0, rescued: 0,
    rowsDeleted: 0, rowsRewritten: 0, rowsWritten: 0, storedBytesFreed: 0, garbageBytesKept: 0, transactions: 0,
    fileBytesBefore: f0.file, fileBytesAfter: f0.file, freeBytes: f0.free, markMs: 0, sweepMs: 0, rewriteMs: 0, vacuumMs: 0,
  };
  const progress: GcProgress = { phase: 'mark', done: 0, total: 0, transactions: 0 };
  const report = () => opts.onProgress?.({ ...progress, transactions: stats.transactions });
  report();
  try {
    const t0 = performance.now();
    const marker = new Marker(store);
    const { garbage, rows } = store.read(() => mark(store, marker, opts.roots(), stats));
    stats.markMs = performance.now() - t0;
    const rewrite = [...rows.entries()].filter(([, r]) => r.liveBytes > 0 && r.bytes - r.liveBytes >= Math.max(MIN_REWRITE_BYTES, (opts.rewriteShare ?? 0.2) * r.bytes));
    for (const [, r] of rows) {
      const dead = r.bytes - r.liveBytes;
      if (r.liveBytes === 0) stats.storedBytesFreed += r.bytes;
      else if (!rewrite.some(([, x]) => x === r)) stats.garbageBytesKept += dead;
    }
    if (opts.dryRun) {
      for (const [, r] of rewrite) stats.storedBytesFreed += r.bytes - r.liveBytes;
      return finish(store, stats, progress, report, false);
    }
    const t1 = performance.now();
    progress.phase = 'sweep';
    progress.total = garbage.length;
    report();
    for (let i = 0; i < garbage.length || i === 0; i += batch) {
      sweepBatch(store, marker, opts, garbage.slice(i, i + batch), rows, stats);
      progress.done = Math.min(garbage.length, i + batch);
      report();
      // Between transactions: let this process's other work (and other writers) in.
      await new Promise((r) => setImmediate(r));
    }
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
  }
}

function finish(store: Store, stats: GcStats, progress: GcProgress, report: () => void, vacuum: boolean): GcStats {
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

/** Mark, in one read snapshot: the live set, the garbage (ordered by row), and each row's make-up. */
function mark(store: Store, marker: Marker, roots: GcRoot[], stats: GcStats): { garbage: Garbage[]; rows: Map<number, Row> } {
  const db = store.db;
  stats.states = roots.length;
  for (const s of roots) marker.state(s);
  marker.takeFresh();
  // Delta bases of live objects are live (and their bases, and so on).
  const deltas = new Map<string, Buffer>();
  for (const d of db.prepare('SELECT id, base FROM objects WHERE base IS NOT NULL').iterate() as IterableIterator<{ id: Buffer; base: Buffer }>) deltas.set(keyOf(d.id), d.base);
  const work = [...deltas.keys()].filter((k) => marker.live.has(k));
  while (work.length > 0) {
    for (const b of splitBases(deltas.get(work.pop()!)!)) {
      if (marker.mark(Buffer.from(b)) && deltas.has(keyOf(b))) work.push(keyOf(b));
    }
  }
  marker.takeFresh();
  deltas.clear();
  const rows = new Map<number, Row>();
  for (const r of db.prepare('SELECT id, length(data) AS n FROM packs').iterate() as IterableIterator<{ id: number; n: number }>) {
    rows.set(r.id, { bytes: r.n, objects: 0, garbage: 0, liveBytes: 0, frames: new Set(), rescued: false });
  }
  const garbage: Garbage[] = [];
  const q = db.prepare('SELECT id, size, pack, offset, length FROM objects');
  for (const o of q.iterate() as IterableIterator<{ id: Buffer; size: number; pack: number; offset: number; length: number }>) {
    stats.objects++;
    const row = rows.get(o.pack);
    if (row) row.objects++;
    if (marker.live.has(keyOf(o.id))) {
      stats.liveObjects++;
      if (row && !row.frames.has(o.offset)) {
        row.frames.add(o.offset);
        row.liveBytes += o.length;
      }
    } else {
      garbage.push({ id: o.id, pack: o.pack });
      stats.garbageBytes += o.size;
      if (row) row.garbage++;
    }
  }
  for (const r of rows.values()) r.frames.clear();
  stats.garbageObjects = garbage.length;
  garbage.sort((a, b) => a.pack - b.pack);
  return { garbage, rows };
}

/**
 * One sweep transaction: under the write lock, walk whatever kept state mark has not seen (a
 * Commit or import published since), keep the bases of what that adds, then delete this batch's
 * garbage that is still garbage, and the rows left empty.
 */
function sweepBatch(store: Store, marker: Marker, opts: GcOptions, items: Garbage[], rows: Map<number, Row>, stats: GcStats): void {
  const db = store.db;
  const baseOf = db.prepare('SELECT base FROM objects WHERE id = ?').pluck();
  const del = db.prepare('DELETE FROM objects WHERE id = ?');
  db.exec('BEGIN IMMEDIATE');
  try {
    for (const s of opts.roots()) if (!marker.walkedRoot(s.rootId)) marker.state(s);
    for (let fresh = marker.takeFresh(); fresh.length > 0; fresh = marker.takeFresh()) {
      for (const id of fresh) {
        const base = baseOf.get(id) as Buffer | null | undefined;
        if (base) for (const b of splitBases(base)) marker.mark(Buffer.from(b));
      }
    }
    if (stats.transactions === 0) opts.beforeSweep?.((id) => marker.live.has(keyOf(id)));
    const touched = new Set<number>();
    for (const g of items) {
      if (marker.live.has(keyOf(g.id))) {
        stats.rescued++;
        const row = rows.get(g.pack);
        if (row) row.rescued = true;
        continue;
      }
      stats.deletedObjects += del.run(g.id).changes;
      const row = rows.get(g.pack);
      if (row) {
        row.garbage--;
        touched.add(g.pack);
      }
    }
    for (const pack of touched) {
      const row = rows.get(pack)!;
      if (row.liveBytes === 0 && row.garbage === 0 && !row.rescued) dropRow(store, pack, stats);
    }
    // Rows nothing pointed into at mark (a crash between a batch's deletes and its row's): gone too.
    if (stats.transactions === 0) for (const [pack, row] of rows) if (row.objects === 0 && row.bytes > 0) dropRow(store, pack, stats);
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
function dropRow(store: Store, pack: number, stats: GcStats): void {
  const db = store.db;
  const max = db.prepare('SELECT max(id) FROM packs').pluck().get() as number | null;
  if (pack === max) db.prepare("UPDATE packs SET data = x'' WHERE id = ?").run(pack);
  else db.prepare('DELETE FROM packs WHERE id = ?').run(pack);
  stats.rowsDeleted++;
}
