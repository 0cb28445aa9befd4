/**
 * Content-addressed object storage. An ObjectId is BLAKE3(domain tag ‖ 0x00 ‖ canonical bytes);
 * the kind column names the domain, so every read re-hashes and authenticates what it returns.
 * Small objects are packed into zstd-compressed groups, a large file's chunks into rows of
 * separately compressed frames, and a changed file or page may be stored as a delta against
 * its previous version (docs/FORMAT.md "Physical forms"); the physical form never changes an id.
 */
import { objectId, zstdCompress, zstdCompressResult, zstdCompressStart, zstdDecompress } from '../native/index.js';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import {
  CHUNK_DELTA_LEVEL,
  Codec,
  COMPRESSION_LEVEL,
  compressionEnabled,
  DELTA_LEVEL,
  DELTA_MAX_BASES,
  DELTA_MAX_CHAIN_BYTES,
  DELTA_MAX_DEPTH,
  DELTA_MIN_SIZE,
  EDIT_CHUNKS,
  KEEP_COMPRESSED,
  KEEP_DELTA,
  KEEP_TREE_DELTA,
  looksRandom,
  REBASE_DEPTH,
} from './codec.js';
import { CHUNK_FRAME_TARGET, CHUNK_PACK_TARGET, GROUP_TARGET, PACK_TARGET, ROW_TARGET, TREE_GROUP_TARGET, TREE_ROW_TARGET } from './schema.js';
import type { ChunkDeltaSource } from './chunk-delta.js';
import type { Db } from './store.js';
import { mapSqliteError } from './sqlite-errors.js';

export enum ObjectKind {
  /** Whole content of a regular file below the chunking threshold. */
  Blob = 1,
  /** One FastCDC chunk of a large file. */
  Chunk = 2,
  /** A node of a large file's extent tree. */
  Extents = 3,
  /** A page of a namespace tree (inode table or directory). */
  Page = 4,
  /** A filesystem root. */
  Root = 5,
}

export const DOMAIN_TAGS: Record<ObjectKind, string> = {
  [ObjectKind.Blob]: 'layerfs/blob/v1',
  [ObjectKind.Chunk]: 'layerfs/chunk/v1',
  [ObjectKind.Extents]: 'layerfs/extents/v1',
  [ObjectKind.Page]: 'layerfs/page/v1',
  [ObjectKind.Root]: 'layerfs/root/v1',
};

export { Codec };

/** The base ids of a delta: its `base` column holds one to DELTA_MAX_BASES ids, concatenated. */
function deltaBases(base: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i + 32 <= base.length; i += 32) out.push(base.subarray(i, i + 32));
  return out;
}

export function idOf(kind: ObjectKind, data: Uint8Array): Buffer {
  return objectId(DOMAIN_TAGS[kind], data);
}

export interface WriteStats {
  objectsInserted: number;
  objectsReused: number;
  bytesInserted: number;
  bytesReused: number;
}

export function emptyWriteStats(): WriteStats {
  return { objectsInserted: 0, objectsReused: 0, bytesInserted: 0, bytesReused: 0 };
}


/** An object written by this writer and not yet in the index. */
interface Pending {
  id: Buffer;
  kind: ObjectKind;
  group: Group;
  /** Where its bytes are in the group's buffer. */
  offset: number;
  length: number;
  /**
   * Set when it moved out of its group to be stored as a delta; `data` is then its own copy and
   * `base` the ids of its bases, concatenated (docs/FORMAT.md "Physical forms", codec 2).
   */
  delta?: { base: Buffer; frame: Buffer; data: Buffer; depth: number };
}

/**
 * Small objects collect in open groups, one per class: file content, tree objects (pages,
 * roots, extent nodes) and content that looks random. A full group is sealed into one frame
 * (zstd unless it is the random class or compression does not pay) of the row being assembled;
 * a read of one small object decodes its frame only. Its buffer is never reused, so objects of a
 * sealed group stay readable until their row is written.
 */
class Group {
  buf: Buffer;
  bytes = 0;
  items: Pending[] = [];
  moved = 0;
  sealed = false;

  constructor(
    readonly compress: boolean,
    readonly target: number,
  ) {
    this.buf = Buffer.allocUnsafe(target + 16 * 1024);
  }

  append(data: Uint8Array): number {
    if (this.bytes + data.length > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(2 * this.buf.length, this.bytes + data.length));
      this.buf.copy(bigger, 0, 0, this.bytes);
      this.buf = bigger;
    }
    this.buf.set(data, this.bytes);
    const at = this.bytes;
    this.bytes += data.length;
    return at;
  }
}

const enum GroupClass {
  Content = 0,
  Tree = 1,
  Random = 2,
  /**
   * The few new chunks of an edited large file (putChunks): held unsealed until the editor's
   * delta hint arrives after the whole file is written, when a content group would already have
   * sealed all but the last.
   */
  Edit = 3,
}

/** Canonical bytes an Edit group holds before it is sealed: about EDIT_CHUNKS average chunks. */
const EDIT_GROUP_TARGET = 128 * 1024;

interface ChainInfo {
  /** Delta links from this object to a full one. */
  depth: number;
  /** Bytes decoded along the way, this object included. */
  bytes: number;
}

/**
 * A part of the row being assembled: a sealed group (its plain bytes, and the background
 * compression job of it, if any) or one delta frame.
 */
type RowPart = { live: Pending[]; at: number[]; data: Buffer; job: number | undefined } | { delta: Pending };

/** Compressed groups are counted at this fraction of their size towards ROW_TARGET until their frame is known. */
const EXPECTED_RATIO = 0.4;
/** The parts of one pack row being assembled, and the stored bytes they are expected to take. */
class RowAssembly {
  parts: RowPart[] = [];
  bytes = 0;

  constructor(readonly target: number) {}

  /** Adds a part expected to store `expected` bytes; true once the row is full. */
  add(part: RowPart, expected: number): boolean {
    this.parts.push(part);
    this.bytes += expected;
    return this.bytes >= this.target;
  }

  /** Moves the parts of `other` into this row. */
  absorb(other: RowAssembly): void {
    this.parts.push(...other.parts);
    this.bytes += other.bytes;
    other.take();
  }

  /** The parts; the assembly starts empty again. */
  take(): RowPart[] {
    const parts = this.parts;
    this.parts = [];
    this.bytes = 0;
    return parts;
  }
}

/** Complete rows kept back so the compression thread finishes their frames meanwhile. */
const ROWS_IN_FLIGHT = 2;
/** The same for tree groups (pages, mostly ids, compress to ~0.57×). */
const TREE_EXPECTED_RATIO = 0.6;

/**
 * Writes objects inside the caller's transaction; `flush()` must run before it commits.
 * Duplicates (already stored, or already written by this writer) cost one index probe and no
 * payload bytes. Small objects go to groups of about GROUP_TARGET canonical bytes (a group is
 * sealed when the next object arrives, so the object written last is still open for
 * suggestBase); sealed frames and deltas are assembled into rows of about ROW_TARGET stored
 * bytes (few, large rows waste the least SQLite page space). The chunks of a large file go to
 * rows of their own of about CHUNK_PACK_TARGET bytes, cut into frames of about
 * CHUNK_FRAME_TARGET bytes (putChunks), so a random read decodes one frame.
 */
export class ObjectWriter {
  private readonly exists;
  private readonly locate;
  private readonly insertPack;
  private readonly insertObject;
  private readonly compress = compressionEnabled();
  private readonly groups: Group[];
  /**
   * Objects of open groups, of the row being assembled and pending deltas by id (latin1): the
   * only ones a probe of the index cannot see yet.
   */
  private readonly open = new Map<string, Pending>();
  /** The mixed row being assembled: sealed content groups and deltas. */
  private readonly mixed: RowAssembly;
  /** Sealed tree groups, assembled into rows of about TREE_ROW_TARGET stored bytes. */
  private readonly trees = new RowAssembly(TREE_ROW_TARGET);
  /** Complete rows not written yet (queueRow). */
  private readonly ready: RowPart[][] = [];
  private reader: ObjectReader | undefined;
  readonly stats: WriteStats = emptyWriteStats();
  /**
   * Set by a commit while it stores a changed large file: the previous version's chunks, offered
   * as delta bases to the new chunks (putChunks). Cleared by the caller when the file is stored.
   */
  deltaSource: ChunkDeltaSource | undefined;

  constructor(
    private readonly db: Db,
    private readonly path: string,
  ) {
    this.exists = db.prepare('SELECT 1 FROM objects WHERE id = ?').pluck();
    this.locate = db.prepare('SELECT size, codec, base FROM objects WHERE id = ?');
    this.insertPack = db.prepare('INSERT INTO packs (data) VALUES (?)');
    this.insertObject = db.prepare('INSERT INTO objects (id, kind, size, codec, pack, offset, length, at, base) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)');
    // Uncompressed, a group is a row of its own (format 1's mixed rows).
    this.groups = this.compress
      ? [this.newGroup(GroupClass.Content), this.newGroup(GroupClass.Tree), this.newGroup(GroupClass.Random), this.newGroup(GroupClass.Edit)]
      : [new Group(false, PACK_TARGET)];
    this.mixed = new RowAssembly(this.compress ? ROW_TARGET : 0);
  }

  private newGroup(c: GroupClass): Group {
    if (c === GroupClass.Tree) return new Group(true, TREE_GROUP_TARGET);
    if (c === GroupClass.Edit) return new Group(true, EDIT_GROUP_TARGET);
    return new Group(c !== GroupClass.Random, GROUP_TARGET);
  }

  private classOf(kind: ObjectKind, data: Uint8Array): number {
    if (!this.compress) return 0;
    if (kind === ObjectKind.Blob || kind === ObjectKind.Chunk) return looksRandom(data) ? GroupClass.Random : GroupClass.Content;
    return GroupClass.Tree;
  }

  /** Stores `data` under `id` unless present; returns whether it was new. */
  put(kind: ObjectKind, id: Buffer, data: Uint8Array): boolean {
    return this.putIn(kind, id, data, -1);
  }

  /** put() into the group of class `cls` (-1: the class of kind and data). */
  private putIn(kind: ObjectKind, id: Buffer, data: Uint8Array, cls: number): boolean {
    const key = id.toString('latin1');
    if (this.open.has(key) || this.stored(id)) {
      this.stats.objectsReused++;
      this.stats.bytesReused += data.length;
      return false;
    }
    const c = cls < 0 || !this.compress ? this.classOf(kind, data) : cls;
    let g = this.groups[c]!;
    if (g.bytes >= g.target) {
      this.seal(c);
      g = this.groups[c]!;
    }
    const p: Pending = { id, kind, group: g, offset: g.append(data), length: data.length };
    g.items.push(p);
    this.open.set(key, p);
    this.stats.objectsInserted++;
    this.stats.bytesInserted += data.length;
    return true;
  }

  /** Hashes and stores; returns the id. */
  add(kind: ObjectKind, data: Uint8Array): Buffer {
    const id = idOf(kind, data);
    this.put(kind, id, data);
    return id;
  }

  /** A copy of an object written by this writer but not flushed yet, if it is one. */
  unflushed(id: Buffer): Buffer | undefined {
    const p = this.open.get(id.toString('latin1'));
    if (!p) return undefined;
    return p.delta ? p.delta.data : Buffer.from(p.group.buf.subarray(p.offset, p.offset + p.length));
  }

  /**
   * A hint that `id`, just written, is a new version of `bases` (a changed file or a rewritten
   * page; or the old chunks a re-chunked piece of a large file overlaps, in file order, at most
   * DELTA_MAX_BASES). If `id` is still in an open group and a zstd delta against the bases'
   * bytes, concatenated, is at most KEEP_DELTA of its size, it is stored as that delta instead,
   * unless the chains of bases would exceed DELTA_MAX_DEPTH links or DELTA_MAX_CHAIN_BYTES bytes.
   * Without the hint nothing changes. True when `id` is now stored as a delta.
   */
  suggestBase(id: Buffer, bases: Buffer | Buffer[]): boolean {
    const p = this.open.get(id.toString('latin1'));
    if (!p || p.delta || p.group.sealed) return false;
    const d = this.deltaOf(p, p.group.buf.subarray(p.offset, p.offset + p.length), Array.isArray(bases) ? bases : [bases]);
    if (!d) return false;
    p.delta = d;
    p.group.moved++;
    if (this.mixed.add({ delta: p }, d.frame.length)) this.writeRow(this.mixed);
    return true;
  }

  /**
   * The delta of `p` (canonical bytes `data`) against `bases` if it pays (KEEP_DELTA, or
   * KEEP_TREE_DELTA for tree objects) and the chains stay within their bounds; when the one base
   * offered ends a full chain, against its ancestor REBASE_DEPTH links from a full object.
   */
  private deltaOf(p: Pending, data: Uint8Array, bases: Buffer[]): Pending['delta'] {
    let ids = bases.slice(0, DELTA_MAX_BASES);
    if (!this.compress || ids.length === 0 || p.length < DELTA_MIN_SIZE || ids.some((b) => b.equals(p.id))) return undefined;
    let chain = this.chainOf(ids, p.id, DELTA_MAX_CHAIN_BYTES - p.length);
    if (chain && chain.depth + 1 > DELTA_MAX_DEPTH && ids.length === 1) {
      // A full chain: delta against an older version on it instead of storing this one whole.
      const older = this.ancestor(ids[0]!, chain.depth + 1 - REBASE_DEPTH);
      if (older) {
        ids = [older];
        chain = this.chainOf(ids, p.id, DELTA_MAX_CHAIN_BYTES - p.length);
      }
    }
    if (!chain || chain.depth + 1 > DELTA_MAX_DEPTH) return undefined;
    const parts: Buffer[] = [];
    for (const b of ids) {
      const bytes = this.bytesOf(b);
      if (!bytes) return undefined;
      parts.push(bytes);
    }
    const level = p.kind === ObjectKind.Chunk ? CHUNK_DELTA_LEVEL : DELTA_LEVEL;
    const frame = zstdCompress(data, level, parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    if (frame.length > p.length * (p.kind === ObjectKind.Blob || p.kind === ObjectKind.Chunk ? KEEP_DELTA : KEEP_TREE_DELTA)) return undefined;
    return { base: ids.length === 1 ? ids[0]! : Buffer.concat(ids), frame, data: Buffer.from(data), depth: chain.depth + 1 };
  }

  /**
   * Links and bytes a read of `ids` decodes (the deepest chain, every object on the way
   * counted); undefined if one is unknown, reaches `avoid`, or the chains pass DELTA_MAX_DEPTH
   * links or `budget` bytes.
   */
  private chainOf(ids: Buffer[], avoid: Buffer, budget: number): ChainInfo | undefined {
    let bytes = 0;
    const walk = (id: Buffer, depth: number): number | undefined => {
      if (depth > DELTA_MAX_DEPTH || id.equals(avoid)) return undefined;
      const p = this.open.get(id.toString('latin1'));
      let base: Buffer | null;
      if (p) {
        bytes += p.length;
        base = p.delta?.base ?? null;
      } else {
        const loc = this.locate.get(id) as { size: number; codec: number; base: Buffer | null } | undefined;
        if (!loc) return undefined;
        bytes += loc.size;
        base = loc.codec === Codec.Delta ? loc.base : null;
      }
      if (bytes > budget) return undefined;
      if (base === null) return depth;
      let deepest = depth;
      for (const b of deltaBases(base)) {
        const d = walk(b, depth + 1);
        if (d === undefined) return undefined;
        deepest = Math.max(deepest, d);
      }
      return deepest;
    };
    let depth = 0;
    for (const id of ids) {
      const d = walk(id, 0);
      if (d === undefined) return undefined;
      depth = Math.max(depth, d);
    }
    return { depth, bytes };
  }

  /** The object `links` single-base delta links below `id`; undefined where its chain ends sooner or branches. */
  private ancestor(id: Buffer, links: number): Buffer | undefined {
    let cur = id;
    for (let i = 0; i < links; i++) {
      const p = this.open.get(cur.toString('latin1'));
      let base: Buffer | null | undefined;
      if (p) base = p.delta?.base;
      else {
        const loc = this.locate.get(cur) as { codec: number; base: Buffer | null } | undefined;
        base = loc?.codec === Codec.Delta ? loc.base : undefined;
      }
      if (!base || base.length !== 32) return undefined;
      cur = base;
    }
    return cur;
  }

  /** An object's bytes, whether written by this writer or stored before (authenticated). */
  read(id: Buffer): Buffer {
    const own = this.unflushed(id);
    if (own) return own;
    return (this.reader ??= new ObjectReader(this.db, this.path)).get(id);
  }

  private bytesOf(id: Buffer): Buffer | undefined {
    const p = this.open.get(id.toString('latin1'));
    if (p) return p.delta ? p.delta.data : p.group.buf.subarray(p.offset, p.offset + p.length);
    try {
      return (this.reader ??= new ObjectReader(this.db, this.path)).get(id);
    } catch (e) {
      // A damaged base is no base: the object is stored whole.
      if (e instanceof LayerFsError) return undefined;
      throw e;
    }
  }

  /** Seals the open group of class `c` into a frame of the row being assembled; opens a new one. */
  private seal(c: number): void {
    const g = this.groups[c]!;
    this.groups[c] = this.compress ? this.newGroup(c) : new Group(false, PACK_TARGET);
    g.sealed = true;
    const live = g.moved ? g.items.filter((p) => !p.delta) : g.items;
    if (live.length === 0) return;
    let data: Buffer;
    let at: number[];
    if (g.moved === 0) {
      data = g.buf.subarray(0, g.bytes);
      at = live.map((p) => p.offset);
    } else {
      data = Buffer.concat(live.map((p) => g.buf.subarray(p.offset, p.offset + p.length)));
      let pos = 0;
      at = live.map((p) => (pos += p.length) - p.length);
    }
    // Compressed on the addon's thread while this writer goes on; collected in writeParts().
    // An edit group holds whatever chunks an edit made: random ones are not worth a job.
    const compress = g.compress && !(c === GroupClass.Edit && looksRandom(data));
    const job = compress ? zstdCompressStart(data, COMPRESSION_LEVEL) : undefined;
    const part = { live, at, data, job };
    if (c === GroupClass.Tree && this.compress) {
      // Tree rows of their own, smaller: a cold page read loads its whole row (below).
      if (this.trees.add(part, data.length * TREE_EXPECTED_RATIO)) this.writeRow(this.trees);
      return;
    }
    if (this.mixed.add(part, job === undefined ? data.length : data.length * EXPECTED_RATIO)) this.writeRow(this.mixed);
  }

  /** Queues the row `a` has assembled, if any. */
  private writeRow(a: RowAssembly): void {
    if (a.parts.length > 0) this.queueRow(a.take());
  }

  /**
   * A complete row waits until ROWS_IN_FLIGHT newer rows are complete before it is written
   * (taking its frames from the compression thread): written at once, its last group's frame
   * was just started, and the writer waited for it (docs/DESIGN.md).
   */
  private queueRow(parts: RowPart[]): void {
    this.ready.push(parts);
    if (this.ready.length > ROWS_IN_FLIGHT) this.writeParts(this.ready.shift()!);
  }

  /** Writes `parts` as one pack row and their objects' index rows. */
  private writeParts(parts: RowPart[]): void {
    const bufs: Buffer[] = [];
    const entries: [Pending, Codec, number, number, number, Buffer | null][] = [];
    let off = 0;
    for (const part of parts) {
      if ('delta' in part) {
        const d = part.delta.delta!;
        entries.push([part.delta, Codec.Delta, off, d.frame.length, 0, d.base]);
        bufs.push(d.frame);
        off += d.frame.length;
        continue;
      }
      let frame: Buffer | null = null;
      if (part.job !== undefined) {
        const z = zstdCompressResult(part.job);
        if (z.length <= part.data.length * KEEP_COMPRESSED) frame = z;
      }
      part.live.forEach((p, i) => entries.push(frame ? [p, Codec.Zstd, off, frame.length, part.at[i]!, null] : [p, Codec.Raw, off + part.at[i]!, p.length, 0, null]));
      const bytes = frame ?? part.data;
      bufs.push(bytes);
      off += bytes.length;
    }
    const row = bufs.length === 1 ? bufs[0]! : Buffer.concat(bufs, off);
    try {
      // SQLite copies the bound bytes.
      const pack = Number(this.insertPack.run(row).lastInsertRowid);
      for (const [p, codec, offset, length, at, base] of entries) this.insertObject.run(p.id, p.kind, p.length, codec, pack, offset, length, at, base);
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    for (const [p] of entries) this.open.delete(p.id.toString('latin1'));
  }

  /**
   * Stores consecutive chunks of one file: `data` holds them back to back, `lengths` their
   * sizes and `ids` their ids (32 bytes each). New chunks go to rows of their own, split into
   * rows of about CHUNK_PACK_TARGET bytes. Nothing refers to `data` once this returns.
   */
  putChunks(data: Buffer, lengths: ArrayLike<number>, ids: Buffer): void {
    const fresh: Pending[] = [];
    let freshBytes = 0;
    // Repeats inside this call: not in the index until the rows below are written.
    const here = new Set<string>();
    let offset = 0;
    const none = new Group(false, 0);
    for (let i = 0; i < lengths.length; i++) {
      const length = lengths[i]!;
      const id = ids.subarray(i * 32, i * 32 + 32);
      const key = id.toString('latin1');
      if (here.has(key) || this.open.has(key) || this.stored(id)) {
        this.stats.objectsReused++;
        this.stats.bytesReused += length;
        this.deltaSource?.next(id, length, false);
      } else {
        here.add(key);
        const p: Pending = { id, kind: ObjectKind.Chunk, group: none, offset, length };
        if (!this.chunkDelta(p, data.subarray(offset, offset + length))) {
          fresh.push(p);
          freshBytes += length;
        }
      }
      offset += length;
    }
    if (fresh.length === 0) return;
    if (this.compress && fresh.length <= EDIT_CHUNKS && fresh.length < lengths.length) {
      // An edited large file: its few new chunks wait in the Edit group like small objects, so
      // the editor's suggestBase can still turn each into a delta against the chunks it replaces.
      for (const c of fresh) this.putIn(ObjectKind.Chunk, Buffer.from(c.id), data.subarray(c.offset, c.offset + c.length), GroupClass.Edit);
      return;
    }
    const rows = Math.max(1, Math.round(freshBytes / CHUNK_PACK_TARGET));
    const rowTarget = freshBytes / rows;
    let start = 0;
    let bytes = 0;
    for (let i = 0; i < fresh.length; i++) {
      bytes += fresh[i]!.length;
      if (bytes >= rowTarget || i === fresh.length - 1) {
        this.writeChunkRow(data, fresh, start, i + 1);
        start = i + 1;
        bytes = 0;
      }
    }
  }

  /**
   * A new chunk of a changed large file stored as a delta against the old chunks at its place
   * (deltaSource), when that pays; true if it was. Kept chunks wait as deltas of the mixed row.
   */
  private chunkDelta(p: Pending, data: Buffer): boolean {
    const src = this.deltaSource;
    const bases = src?.next(p.id, p.length, true);
    if (!src || !bases || bases.length === 0) return false;
    const d = this.deltaOf(p, data, bases);
    src.result(d !== undefined);
    if (!d) return false;
    p.delta = d;
    this.open.set(p.id.toString('latin1'), p);
    this.stats.objectsInserted++;
    this.stats.bytesInserted += p.length;
    if (this.mixed.add({ delta: p }, d.frame.length)) this.writeRow(this.mixed);
    return true;
  }

  /** One chunk row: frames of about CHUNK_FRAME_TARGET bytes, each compressed if that pays. */
  private writeChunkRow(data: Buffer, chunks: Pending[], from: number, to: number): void {
    const frameTarget = this.compress ? CHUNK_FRAME_TARGET : Infinity;
    const parts: Buffer[] = [];
    const entries: [Pending, Codec, number, number, number][] = [];
    let rowBytes = 0;
    let plainBytes = 0;
    for (let i = from; i < to; ) {
      let j = i;
      let bytes = 0;
      while (j < to && bytes < frameTarget) bytes += chunks[j++]!.length;
      const plain = slice(data, chunks, i, j, bytes);
      let frame: Buffer | null = null;
      if (this.compress && !looksRandom(plain)) {
        const c = zstdCompress(plain, COMPRESSION_LEVEL);
        if (c.length <= plain.length * KEEP_COMPRESSED) frame = c;
      }
      let at = 0;
      for (let k = i; k < j; k++) {
        const c = chunks[k]!;
        entries.push(frame ? [c, Codec.Zstd, rowBytes, frame.length, at] : [c, Codec.Raw, rowBytes + at, c.length, 0]);
        at += c.length;
      }
      const part = frame ?? plain;
      parts.push(part);
      rowBytes += part.length;
      plainBytes += bytes;
      i = j;
    }
    const row = parts.length === 1 ? parts[0]! : Buffer.concat(parts, rowBytes);
    try {
      const pack = Number(this.insertPack.run(row).lastInsertRowid);
      for (const [c, codec, off, len, at] of entries) this.insertObject.run(c.id, c.kind, c.length, codec, pack, off, len, at, null);
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    this.stats.objectsInserted += to - from;
    this.stats.bytesInserted += plainBytes;
  }

  private stored(id: Buffer): boolean {
    try {
      return this.exists.get(id) !== undefined;
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
  }

  /** Writes the open groups and the row being assembled. Call before committing the transaction. */
  flush(): void {
    for (let c = 0; c < this.groups.length; c++) if (this.groups[c]!.items.length > 0) this.seal(c);
    // A small transaction (a commit) writes one row: another row would leave its own slack.
    if (this.trees.parts.length > 0 && this.mixed.bytes + this.trees.bytes <= this.mixed.target) this.mixed.absorb(this.trees);
    this.writeRow(this.trees);
    this.writeRow(this.mixed);
    for (const parts of this.ready.splice(0)) this.writeParts(parts);
  }
}

function slice(data: Buffer, chunks: Pending[], from: number, to: number, bytes: number): Buffer {
  const first = chunks[from]!;
  const last = chunks[to - 1]!;
  if (last.offset + last.length - first.offset === bytes) return data.subarray(first.offset, first.offset + bytes);
  return Buffer.concat(
    chunks.slice(from, to).map((c) => data.subarray(c.offset, c.offset + c.length)),
    bytes,
  );
}

/** An object's index row, without its id: where its stored bytes are and how they decode. */
export interface Locator {
  kind: number;
  size: number;
  codec: number;
  pack: number;
  offset: number;
  length: number;
  at: number;
  base: Buffer | null;
}

/** Bytes of delta bases an ObjectReader keeps decoded (ObjectReader.baseOf). */
const BASE_CACHE_BYTES = 4 * 1024 * 1024;

/** A read follows at most this many delta links (writers make at most DELTA_MAX_DEPTH). */
const MAX_READ_DEPTH = 2 * DELTA_MAX_DEPTH;

/** Authenticated reads: every returned byte has been decoded and re-hashed against its id. */
export class ObjectReader {
  private readonly locate;
  private readonly readPack;
  private readonly readPart;
  /** A few recent packs: sequential reads of a large file touch each pack many times. */
  private readonly packs = new Map<number, Buffer>();
  /** A few recently decoded frames: neighbouring small files usually share a group. */
  private readonly frames = new Map<string, Buffer>();
  /**
   * Recently used delta bases, as authenticated (id-checked) bytes: consecutive new chunks of a
   * changed large file share old chunks as bases, and versions of one file share their chain.
   * Objects a caller asks for are still decoded and re-hashed on every read.
   */
  private readonly bases = new Map<string, Buffer>();
  private basesBytes = 0;

  constructor(
    db: Db,
    private readonly path: string,
  ) {
    // A format-1 Store opened read-only is not upgraded: its objects are all raw.
    const v2 = (db.pragma('user_version', { simple: true }) as number) >= 2;
    this.locate = db.prepare(`SELECT kind, size, codec, pack, offset, length, ${v2 ? 'at, base' : '0 AS at, NULL AS base'} FROM objects WHERE id = ?`);
    this.readPack = db.prepare('SELECT data FROM packs WHERE id = ?').pluck();
    this.readPart = db.prepare('SELECT substr(data, ?, ?) FROM packs WHERE id = ?').pluck();
  }

  has(id: Uint8Array): boolean {
    return this.locate.get(id) !== undefined;
  }

  locator(id: Uint8Array): Locator | undefined {
    return this.locate.get(id) as Locator | undefined;
  }

  /**
   * The stored bytes `loc` names. A chunk's whole row is read and kept (a large file is read
   * in order, many chunks per row); anything else reads just its bytes with substr(), so a small
   * read never copies a whole row.
   */
  private storedBytes(loc: Locator, wholeRow: boolean): Buffer | undefined {
    if (loc.offset < 0 || loc.length < 0) return undefined;
    if (wholeRow) {
      let row = this.packs.get(loc.pack);
      if (!row) {
        row = this.readPack.get(loc.pack) as Buffer | undefined;
        if (!row) return undefined;
        this.packs.set(loc.pack, row);
        if (this.packs.size > 8) this.packs.delete(this.packs.keys().next().value!);
      }
      return loc.offset + loc.length <= row.length ? row.subarray(loc.offset, loc.offset + loc.length) : undefined;
    }
    const part = this.readPart.get(loc.offset + 1, loc.length, loc.pack) as Buffer | null | undefined;
    // substr() returns fewer bytes past the row's end, and NULL (or nothing) without the row.
    return part && part.length === loc.length ? part : undefined;
  }

  /** Forget cached packs (after a rollback removed some). */
  reset(): void {
    this.packs.clear();
    this.frames.clear();
    this.bases.clear();
    this.basesBytes = 0;
  }

  /** A delta base's bytes, from the cache of recent bases or read (and authenticated) now. */
  private baseOf(id: Buffer, depth: number): Buffer {
    const key = id.toString('latin1');
    const hit = this.bases.get(key);
    if (hit) {
      this.bases.delete(key);
      this.bases.set(key, hit);
      return hit;
    }
    const data = this.read(id, undefined, depth);
    if (data.length <= BASE_CACHE_BYTES / 8) {
      this.bases.set(key, data);
      this.basesBytes += data.length;
      for (const [k, v] of this.bases) {
        if (this.basesBytes <= BASE_CACHE_BYTES) break;
        this.bases.delete(k);
        this.basesBytes -= v.length;
      }
    }
    return data;
  }

  get(id: Uint8Array, expected?: ObjectKind): Buffer {
    return this.read(id, expected, 0);
  }

  private locateNow(id: Uint8Array): Locator | undefined {
    try {
      return this.locate.get(id) as Locator | undefined;
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
  }

  /**
   * A read outside a read transaction takes the locator and the row in two statements, and a
   * repack on another connection may move the object in between (it deletes the old row): when
   * a read fails and the locator has changed since, it is read again where it is now. Damage
   * leaves the locator as it is and still fails.
   */
  private read(id: Uint8Array, expected: ObjectKind | undefined, depth: number): Buffer {
    let loc = this.locateNow(id);
    for (let attempt = 0; ; attempt++) {
      try {
        return this.readAt(id, loc, expected, depth);
      } catch (e) {
        if (!(e instanceof LayerFsError) || e.code !== 'ERR_CORRUPT' || !loc || attempt >= 3) throw e;
        const now = this.locateNow(id);
        if (!now || (now.pack === loc.pack && now.offset === loc.offset && now.length === loc.length && now.at === loc.at && now.codec === loc.codec)) throw e;
        loc = now;
      }
    }
  }

  private readAt(id: Uint8Array, loc: Locator | undefined, expected: ObjectKind | undefined, depth: number): Buffer {
    const hex = () => toHex(id);
    if (!loc) throw new LayerFsError('ERR_CORRUPT', `object ${hex()} is missing from the Store`, { id: hex(), path: this.path, hint: 'run layerfs verify' });
    if (expected !== undefined && loc.kind !== expected) {
      throw new LayerFsError('ERR_CORRUPT', `object ${hex()} has kind ${loc.kind}, expected ${expected}`, { id: hex(), path: this.path });
    }
    const damaged = (why: string, cause?: unknown) =>
      new LayerFsError('ERR_CORRUPT', `object ${hex()} has a damaged locator or pack (${why})`, { id: hex(), path: this.path, hint: 'run layerfs verify', cause });
    const stored = (): Buffer => {
      let bytes: Buffer | undefined;
      try {
        bytes = this.storedBytes(loc, loc.kind === ObjectKind.Chunk);
      } catch (e) {
        throw mapSqliteError(e, this.path);
      }
      if (!bytes) throw damaged('outside its pack');
      return bytes;
    };
    let data: Buffer;
    if (loc.codec === Codec.Raw) {
      if (loc.length !== loc.size) throw damaged('length');
      data = stored();
    } else if (loc.codec === Codec.Zstd) {
      const key = `${loc.pack}:${loc.offset}`;
      let frame = this.frames.get(key);
      if (!frame) {
        const bytes = stored();
        try {
          frame = zstdDecompress(bytes, -1);
        } catch (e) {
          throw damaged('frame does not decode', e);
        }
        this.frames.set(key, frame);
        if (this.frames.size > 32) this.frames.delete(this.frames.keys().next().value!);
      }
      if (loc.at < 0 || loc.at + loc.size > frame.length) throw damaged('outside its frame');
      data = frame.subarray(loc.at, loc.at + loc.size);
    } else if (loc.codec === Codec.Delta) {
      if (!loc.base || loc.base.length === 0 || loc.base.length % 32 !== 0 || loc.base.length > 32 * DELTA_MAX_BASES || depth >= MAX_READ_DEPTH) throw damaged('delta base');
      const parts = deltaBases(loc.base).map((b) => this.baseOf(b, depth + 1));
      const base = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      const bytes = stored();
      try {
        data = zstdDecompress(bytes, loc.size, base);
      } catch (e) {
        throw damaged('delta does not decode', e);
      }
    } else throw damaged(`unknown codec ${loc.codec}`);
    const tag = DOMAIN_TAGS[loc.kind as ObjectKind];
    if (tag === undefined || !objectId(tag, data).equals(id)) {
      throw new LayerFsError('ERR_CORRUPT', `object ${hex()} does not match its id`, { id: hex(), path: this.path, hint: 'run layerfs verify to list damaged states' });
    }
    return data;
  }
}
