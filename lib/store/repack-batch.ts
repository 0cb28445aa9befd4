/**
 * One transaction of a repack (repack.ts): the objects of some old pack rows, read as they are
 * now, are laid out anew (repack-rows.ts) and the old rows deleted.
 */
import { LayerFsError } from '../errors.js';
import { zstdCompressResult } from '../native/zstd.js';
import { Codec, KEEP_COMPRESSED, looksRandom } from './codec.js';
import type { StoreAccess as Store } from './access.js';
import { ObjectKind } from './object-id.js';
import { ObjectReader } from './object-reader.js';
import { ensureDictionary } from './repack-dict.js';
import { ChainFlattener } from './repack-flatten.js';
import type { Selection } from './repack-bases.js';
import { SelectedWriter } from './repack-selected.js';
import { assemble, finishChunkFrames, finishFrame, newGroup, rawPart, splitRaw, startChunkFrames, startFrame, type FrameJob, type OpenGroup, type Part, type Planned } from './repack-rows.js';
import type { Dictionary } from './dictionary.js';
import { storedBases } from './dictionary-refs.js';
import { GROUP_TARGET, ROW_TARGET, TREE_GROUP_TARGET, TREE_ROW_TARGET } from './schema.js';

/**
 * Content groups of up to this many plain bytes: a small read decodes its whole group, and 128 KiB
 * is the most a read of one small file should decode (0.309× vs 0.327× with 32 KiB at level 19).
 */
export const REPACK_GROUP_MAX = 128 * 1024;

/**
 * Deltas a batch keeps compressing at a time: each holds a copy of its object and base, and the
 * addon drops the oldest results once it holds too many (a dropped delta is stored whole).
 */
const DELTAS_IN_FLIGHT = 256;

interface InFlightDelta {
  p: Planned;
  data: Buffer;
  job: number;
  base: Buffer;
  limit: number;
}

const enum Cls {
  Content = 0,
  Tree = 1,
  Random = 2,
}

/** The counters of RepackStats a batch adds to. */
export interface BatchStats {
  storedBytesBefore: number;
  storedBytesAfter: number;
  objects: number;
  rowsAfter: number;
  transactions: number;
  skipped: number;
  flattened: number;
  madeWhole: number;
  /** Small files written as deltas the selection planned (repack-bases.ts). */
  selected: number;
  /** Old rows kept as they were because their rewrite came out larger (rewriteBatch), and their objects. */
  rowsKept: number;
  objectsKept: number;
}

function zeroStats(): BatchStats {
  return { storedBytesBefore: 0, storedBytesAfter: 0, objects: 0, rowsAfter: 0, transactions: 0, skipped: 0, flattened: 0, madeWhole: 0, selected: 0, rowsKept: 0, objectsKept: 0 };
}

function addStats(into: BatchStats, from: BatchStats): void {
  for (const k of Object.keys(from) as (keyof BatchStats)[]) into[k] += from[k];
}

/** The byte counters of RepackProgress a batch adds to. */
export interface BatchProgress {
  bytesBefore: number;
  bytesAfter: number;
}

/** How one batch writes: the zstd levels, the dictionary of content groups and chunk frames, whether to flatten chains. */
export interface BatchOptions {
  level: number;
  dict?: Dictionary;
  flatten: boolean;
  /** Planned forms of the small files (repack-bases.ts); without it they keep the rules above. */
  selection?: Selection;
  /** Keep the old rows when the new ones would take more bytes (rewriteBatch). */
  neverGrow: boolean;
}

/**
 * What a batch collected from its old rows before laying them out. Content and tree groups and
 * chunk frames start compressing as they are sealed (startFrame), so the addon's compression
 * threads work while this thread goes on reading and writing deltas; layout takes the frames.
 */
class Collected {
  readonly groups: OpenGroup[] = [newGroup(), newGroup(), newGroup()];
  /** Sealed content and tree groups, started; random groups, to be stored raw. */
  readonly started: FrameJob[][] = [[], []];
  readonly random: OpenGroup[] = [];
  readonly deltas: Part[] = [];
  /** Deltas of the selection being compressed, oldest first (SelectedSink), and those stored so far. */
  private readonly inFlight: InFlightDelta[] = [];
  selectedDeltas = 0;
  readonly chunkRows: (FrameJob | Part)[][] = [];
  readonly oldPacks: number[] = [];
  /** Old rows something still points into (never expected: only a repack moves objects, out of old rows). */
  readonly keep = new Set<number>();
  selected: SelectedWriter | undefined;

  constructor(private readonly opts: BatchOptions) {}

  seal(c: Cls): void {
    const g = this.groups[c]!;
    if (g.items.length === 0) return;
    if (c === Cls.Random) this.random.push(g);
    else this.started[c]!.push(startFrame(g, this.opts.level, c === Cls.Content ? this.opts.dict : undefined));
    this.groups[c] = newGroup();
  }

  /** A delta started by the selection's writer; the oldest is taken once too many are running. */
  startDelta(d: InFlightDelta): void {
    this.inFlight.push(d);
    while (this.inFlight.length > DELTAS_IN_FLIGHT) this.takeDelta(this.inFlight.shift()!);
  }

  /** Takes the frames of every delta still running. */
  takeDeltas(): void {
    for (const d of this.inFlight.splice(0)) this.takeDelta(d);
  }

  private takeDelta({ p, data, job, base, limit }: InFlightDelta): void {
    // A result the addon no longer holds (zstdCompressResult) is a delta not made: stored whole.
    const frame = zstdCompressResult(job);
    if (frame && frame.length <= limit && frame.length <= data.length * KEEP_COMPRESSED) {
      this.deltas.push({ bytes: frame, entries: [[p, Codec.Delta, 0, frame.length, 0, base]] });
      this.selectedDeltas++;
    } else this.add(p, data);
  }

  /** Adds an object stored whole to the open group of its class. */
  add(p: Planned, data: Buffer): void {
    const c = p.kind === ObjectKind.Blob || p.kind === ObjectKind.Chunk ? (looksRandom(data) ? Cls.Random : Cls.Content) : Cls.Tree;
    this.group(c, p, data);
  }

  private group(c: Cls, p: Planned, data: Buffer): void {
    const g = this.groups[c]!;
    const max = c === Cls.Content ? REPACK_GROUP_MAX : c === Cls.Tree ? TREE_GROUP_TARGET : GROUP_TARGET;
    if (g.items.length > 0 && (c === Cls.Content ? g.bytes + data.length > max : g.bytes >= max)) this.seal(c);
    const h = this.groups[c]!;
    h.items.push({ p, data });
    h.bytes += data.length;
  }
}

/**
 * Rewrites the objects of `packs` (old rows) into new rows in one transaction, then deletes the
 * old rows. A rewrite whose rows (with a dictionary it stores) would take more bytes than the
 * old rows is undone and the old rows are kept as they are (and recorded as repacked): a repack
 * never makes a batch of the Store larger.
 */
export function rewriteBatch(store: Store, packs: [number, Planned[]][], opts: BatchOptions, stats: BatchStats, progress: BatchProgress, written: (ids: number[]) => void): void {
  const db = store.db;
  // A reader of its own: its frame cache must not outlive the rows this batch deletes.
  const reader = new ObjectReader(db, store.path);
  const mine = zeroStats();
  const moved: BatchProgress = { bytesBefore: 0, bytesAfter: 0 };
  let got: Collected | undefined;
  db.exec('BEGIN IMMEDIATE');
  try {
    db.exec('SAVEPOINT rewrite');
    const dictRow = opts.dict ? ensureDictionary(store, opts.dict) : undefined;
    got = collect(store, reader, packs, opts, mine, moved);
    const ids = writeRows(store, layout(store, got), mine, moved);
    mine.selected += got.selectedDeltas;
    if (dictRow !== undefined) {
      // The dictionary's row is one the repack wrote, like the others.
      ids.push(dictRow);
      mine.rowsAfter++;
      mine.storedBytesAfter += rowBytes(db, dictRow);
    }
    if (opts.neverGrow && mine.storedBytesAfter > mine.storedBytesBefore) {
      db.exec('ROLLBACK TO rewrite');
      got.selected?.discard();
      keepOld(db, packs, mine, moved);
      written(packs.map(([pack]) => pack));
    } else {
      const deletePack = db.prepare('DELETE FROM packs WHERE id = ?');
      // No writer adds objects to an existing row, so once its planned objects moved nothing
      // points into an old row (checking that by query would scan the whole index per row).
      for (const pack of got.oldPacks) if (!got.keep.has(pack)) deletePack.run(pack);
      written(ids);
    }
    db.exec('RELEASE rewrite');
    db.exec('COMMIT');
    got.selected?.committed();
    mine.transactions++;
    addStats(stats, mine);
    progress.bytesBefore += moved.bytesBefore;
    progress.bytesAfter += moved.bytesAfter;
  } catch (e) {
    if (db.inTransaction) db.exec('ROLLBACK');
    got?.selected?.discard();
    throw e;
  }
}

function rowBytes(db: Store['db'], pack: number): number {
  return (db.prepare('SELECT length(data) FROM packs WHERE id = ?').pluck().get(pack) as number | undefined) ?? 0;
}

/** The counters of a batch whose old rows stay: nothing moved, every row as it was. */
function keepOld(db: Store['db'], packs: [number, Planned[]][], mine: BatchStats, moved: BatchProgress): void {
  const before = packs.reduce((n, [pack]) => n + rowBytes(db, pack), 0);
  const objectsKept = packs.reduce((n, [, planned]) => n + planned.length, 0) - mine.skipped;
  Object.assign(mine, zeroStats(), { storedBytesBefore: before, storedBytesAfter: before, rowsAfter: packs.length, rowsKept: packs.length, objectsKept, skipped: mine.skipped });
  moved.bytesBefore = before;
  moved.bytesAfter = before;
}

/** Reads the live objects of the old rows into groups, delta parts and chunk rows. */
function collect(store: Store, reader: ObjectReader, packs: [number, Planned[]][], opts: BatchOptions, stats: BatchStats, progress: BatchProgress): Collected {
  const db = store.db;
  const locate = db.prepare('SELECT pack, offset, length, at, codec FROM objects WHERE id = ?');
  const readRow = db.prepare('SELECT data FROM packs WHERE id = ?').pluck();
  const flattener = opts.flatten ? new ChainFlattener(db, reader) : undefined;
  const got = new Collected(opts);
  const copy = (p: Planned, row: Buffer | undefined): void => {
    // Its frame is copied as it is: its bases, and so its chain, do not change, and damage
    // (if any) stays where a read or verify finds it.
    if (!row || p.offset + p.length > row.length) throw new LayerFsError('ERR_CORRUPT', `delta outside its pack`, { path: store.path });
    const bytes = Buffer.from(row.subarray(p.offset, p.offset + p.length));
    got.deltas.push({ bytes, entries: [[p, Codec.Delta, 0, bytes.length, 0, p.base]] });
  };
  const selected = opts.selection
    ? new SelectedWriter(db, reader, opts.selection, {
        delta: (p, data, job, base, limit) => got.startDelta({ p, data, job, base, limit }),
        whole: (p, data) => got.add(p, data),
        asIs: (p) => (p.codec === Codec.Delta ? copy(p, readRow.get(p.pack) as Buffer | undefined) : got.add(p, reader.get(p.id))),
      })
    : undefined;
  got.selected = selected;
  for (const [pack, planned] of packs) {
    const row = readRow.get(pack) as Buffer | undefined;
    stats.storedBytesBefore += row?.length ?? 0;
    progress.bytesBefore += row?.length ?? 0;
    const live = planned.filter((p) => {
      const now = locate.get(p.id) as { pack: number; offset: number; length: number; at: number; codec: number } | undefined;
      const same = now !== undefined && now.pack === p.pack && now.offset === p.offset && now.length === p.length && now.at === p.at && now.codec === p.codec;
      if (!same) {
        stats.skipped++;
        if (now?.pack === p.pack) got.keep.add(pack);
      }
      return same;
    });
    got.oldPacks.push(pack);
    if (live.length === 0) continue;
    // Chunk rows (a large file's new chunks) stay rows of their own, re-framed: a sequential
    // read of a large file keeps touching few rows.
    if (live.every((p) => p.kind === ObjectKind.Chunk && p.codec !== Codec.Delta)) {
      got.chunkRows.push(startChunkFrames(live.map((p) => ({ p, data: reader.get(p.id) })), opts.level, opts.dict));
      continue;
    }
    for (const p of live) {
      if (selected?.has(p.id)) {
        selected.write(p);
        continue;
      }
      if (p.codec !== Codec.Delta) {
        got.add(p, reader.get(p.id));
        continue;
      }
      const plan = flattener?.plan(p) ?? { copy: true as const };
      if ('copy' in plan) copy(p, row);
      else if (plan.frame) got.deltas.push({ bytes: plan.frame, entries: [[p, Codec.Delta, 0, plan.frame.length, 0, plan.base]] });
      else got.add(p, plan.data);
    }
  }
  if (flattener) {
    stats.flattened += flattener.flattened;
    stats.madeWhole += flattener.madeWhole;
  }
  return got;
}

/** The new rows: frames of the sealed groups, topped up with raw objects and deltas, then chunk rows. */
function layout(store: Store, got: Collected): Part[][] {
  got.takeDeltas();
  got.seal(Cls.Content);
  got.seal(Cls.Tree);
  got.seal(Cls.Random);
  const content = got.started[Cls.Content]!.map(finishFrame);
  const tree = got.started[Cls.Tree]!.map(finishFrame);
  const chunkRows = got.chunkRows.map(finishChunkFrames);
  // Raw objects need no group: each is its own part, so they can fill rows (assemble).
  const fillers: Part[] = [...got.deltas];
  for (const part of [...content, ...tree]) if (part.entries[0]![1] === Codec.Raw) fillers.push(...splitRaw(part));
  for (const g of got.random) fillers.push(...splitRaw(rawPart(g)));
  const packed = (l: Part[]) => l.filter((p) => p.entries[0]![1] !== Codec.Raw);
  // Tree rows first: they are small and many, and take what fills them from the shared pool.
  fillers.sort((a, b) => b.bytes.length - a.bytes.length);
  const pageSize = store.db.pragma('page_size', { simple: true }) as number;
  const treeRows = assemble(packed(tree), fillers, TREE_ROW_TARGET, false, pageSize);
  return [...treeRows, ...assemble(packed(content), fillers, ROW_TARGET, true, pageSize), ...chunkRows];
}

/** Writes the rows and moves their objects' index rows there; returns the new rows' ids. */
function writeRows(store: Store, rows: Part[][], stats: BatchStats, progress: BatchProgress): number[] {
  const insertPack = store.db.prepare('INSERT INTO packs (data) VALUES (?)');
  const move = store.db.prepare('UPDATE objects SET codec = ?, pack = ?, offset = ?, length = ?, at = ?, base = ? WHERE id = ?');
  const ids: number[] = [];
  const stored = storedBases(store.db);
  for (const parts of rows) {
    const row = Buffer.concat(parts.map((p) => p.bytes));
    const pack = Number(insertPack.run(row).lastInsertRowid);
    ids.push(pack);
    let off = 0;
    for (const part of parts) {
      for (const [p, codec, o, len, at, base] of part.entries) {
        move.run(codec, pack, off + o, len, at, stored(codec, base), p.id);
        stats.objects++;
      }
      off += part.bytes.length;
    }
    stats.rowsAfter++;
    stats.storedBytesAfter += row.length;
    progress.bytesAfter += row.length;
  }
  return ids;
}
