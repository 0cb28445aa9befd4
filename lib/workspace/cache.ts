/**
 * The stat cache of a materialized Workspace: what every path looked like when the Workspace
 * last matched a stored state, with its serial. Stored as packed segments of entries
 * (docs/FORMAT.md, tables workspace_caches and workspace_entries), not one row per path:
 * loading 100,000 entries is ~200 rows and a few byte copies (one row per path cost ~360 ms),
 * and a commit rewrites only the segments whose entries changed (one blob of all entries cost
 * ~30 ms and 5.6 MB of WAL per commit at 100,000 paths). Measurements: docs/DESIGN.md.
 */
import { endianness } from 'node:os';
import { LayerFsError } from '../errors.js';
import { objectId } from '../native/hash.js';
import { WalkKind, type WalkResult } from '../native/walk.js';
import { zstdCompress, zstdDecompress } from '../native/zstd.js';
import { prepared, type Store } from '../store/index.js';
import { allocWalk } from './walk-match.js';

/** A walk (lib/native walkTree: same order, same arrays) plus the serial of every entry. */
export interface StatCache extends WalkResult {
  serial: Uint32Array;
  /** High-water mark: no serial above it was ever used by this Workspace; new inodes get more. */
  maxSerial: number;
  /** As stored (set by loadCache): segment ends and ids, and each directory's entry count. */
  stored?: { ends: number[]; ids: Buffer[]; children: Uint32Array };
}

/** How a new cache relates to the stored one (from diffWalk), so unchanged segments are reused. */
export interface CacheLineage {
  old: StatCache;
  /** Per new entry: the old entry at the same path, or -1. */
  oldIndex: Int32Array;
  /** Per new entry: 1 when anything recorded about it differs from the old entry. */
  changed: Uint8Array;
}

/** Domain tag of segment ids (the first 16 bytes of the object id of the segment's bytes). */
export const SEGMENT_TAG = 'layerfs/workspace-cache/v1';
/** Segment boundaries: at least MIN entries, then an entry whose inode hash has the low 9 bits set ends it, at most MAX. */
export const SEGMENT_MIN = 128;
export const SEGMENT_MASK = 511;
export const SEGMENT_MAX = 4096;
/** Bytes per entry in a segment, names apart: ino, size, mtime, ctime (8 each), serial, children, mode, name end (4 each), kind. */
const ENTRY_BYTES = 8 * 4 + 4 * 4 + 1;

const LE = endianness() === 'LE';
const LO = LE ? 0 : 1;
const HI = LE ? 1 : 0;

const bytesOf = (a: ArrayBufferView): Buffer => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Exclusive ends of the segments of `c`: a function of each entry's inode and the previous end. */
export function segmentEnds(c: Pick<WalkResult, 'count' | 'ino'>): number[] {
  const ino = new Uint32Array(c.ino.buffer, c.ino.byteOffset, c.count * 2);
  const ends: number[] = [];
  let start = 0;
  for (let i = 0; i < c.count; i++) {
    const len = i + 1 - start;
    if (len >= SEGMENT_MAX || (len >= SEGMENT_MIN && (fmix32(ino[2 * i + LO]! ^ fmix32(ino[2 * i + HI]! ^ 0x9e3779b9)) & SEGMENT_MASK) === SEGMENT_MASK)) {
      ends.push(i + 1);
      start = i + 1;
    }
  }
  if (start < c.count) ends.push(c.count);
  return ends;
}

/** Byte-swaps the integer sections of a segment of k entries (big-endian hosts only). */
function swapSegment(seg: Buffer, k: number): void {
  seg.subarray(4, 4 + 32 * k).swap64();
  seg.subarray(4 + 32 * k, 4 + 48 * k).swap32();
}

/** Number of entries listed under each directory (0 for everything else). */
function childCounts(c: StatCache): Uint32Array {
  const children = new Uint32Array(c.count);
  for (let i = 1; i < c.count; i++) children[c.parent[i]!]!++;
  return children;
}

export function encodeSegment(c: StatCache, children: Uint32Array, s: number, e: number, swap = !LE): Buffer {
  const k = e - s;
  const nameStart = c.nameOffsets[s]!;
  const nameBytes = c.nameOffsets[e]! - nameStart;
  const out = Buffer.allocUnsafe(4 + k * ENTRY_BYTES + nameBytes);
  out.writeUInt32LE(k, 0);
  let off = 4;
  for (const a of [c.ino, c.size, c.mtimeNs, c.ctimeNs]) off += bytesOf(a).copy(out, off, s * 8, e * 8);
  for (const a of [c.serial, children, c.mode]) off += bytesOf(a).copy(out, off, s * 4, e * 4);
  const ends = new Uint32Array(k);
  for (let i = 0; i < k; i++) ends[i] = c.nameOffsets[s + i + 1]! - nameStart;
  off += bytesOf(ends).copy(out, off);
  off += bytesOf(c.kind).copy(out, off, s, e);
  c.names.copy(out, off, nameStart, nameStart + nameBytes);
  if (swap) swapSegment(out, k);
  return out;
}

function corrupt(why: string): LayerFsError {
  return new LayerFsError('ERR_CORRUPT', `the stat cache of this Workspace is damaged: ${why}`, {
    hint: 'end the Workspace (after copying out any changes) and create it again',
  });
}

/** Entries and name bytes over all segments, each checked to hold what its count says. */
function segmentTotals(segments: Buffer[]): { total: number; nameTotal: number } {
  let total = 0;
  let nameTotal = 0;
  for (const seg of segments) {
    if (seg.length < 4) throw corrupt('short segment');
    const k = seg.readUInt32LE(0);
    if (k === 0 || seg.length < 4 + k * ENTRY_BYTES) throw corrupt('short segment');
    total += k;
    nameTotal += seg.length - 4 - k * ENTRY_BYTES;
  }
  return { total, nameTotal };
}

function emptyCache(count: number, nameTotal: number, maxSerial: number): StatCache {
  return { ...allocWalk(count, nameTotal), serial: new Uint32Array(count), maxSerial };
}

/** Copies the segments' columns into `c` (and each directory's entry count into `children`). */
function copySegments(c: StatCache, children: Uint32Array, segments: Buffer[], swap: boolean): void {
  const ends = new Uint32Array(SEGMENT_MAX);
  const wide = [c.ino, c.size, c.mtimeNs, c.ctimeNs].map(bytesOf);
  const narrow = [c.serial, children, c.mode].map(bytesOf);
  const kinds = bytesOf(c.kind);
  let pos = 0;
  let namePos = 0;
  for (let seg of segments) {
    const k = seg.readUInt32LE(0);
    if (k > SEGMENT_MAX) throw corrupt('oversized segment');
    if (swap) {
      seg = Buffer.from(seg);
      swapSegment(seg, k);
    }
    let off = 4;
    for (const w of wide) off += seg.copy(w, pos * 8, off, off + k * 8);
    for (const w of narrow) off += seg.copy(w, pos * 4, off, off + k * 4);
    off += seg.copy(bytesOf(ends), 0, off, off + k * 4);
    off += seg.copy(kinds, pos, off, off + k);
    const nameBytes = seg.length - off;
    if (ends[k - 1] !== nameBytes) throw corrupt('names do not fit');
    let prev = 0;
    for (let i = 0; i < k; i++) {
      const end = ends[i]!;
      if (end < prev) throw corrupt('names do not fit');
      c.nameOffsets[pos + i + 1] = namePos + end;
      prev = end;
    }
    seg.copy(c.names, namePos, off);
    namePos += nameBytes;
    pos += k;
  }
}

/**
 * Parents, from each directory's number of entries, replaying the walk order: visit a
 * directory, list all its entries, then visit its subdirectories, the first one next.
 */
function setParents(c: StatCache, children: Uint32Array): void {
  if (c.kind[0] !== WalkKind.Dir || c.nameOffsets[1] !== 0) throw corrupt('bad root');
  c.parent[0] = -1;
  let next = 1;
  const stack = [0];
  while (stack.length > 0) {
    const d = stack.pop()!;
    const first = next;
    next += children[d]!;
    if (next > c.count) throw corrupt('entries missing');
    for (let i = first; i < next; i++) c.parent[i] = d;
    for (let i = next - 1; i >= first; i--) if (c.kind[i] === WalkKind.Dir) stack.push(i);
  }
  if (next !== c.count) throw corrupt('entries outside the tree');
}

/** Rebuilds the cache from its segments, in order; checks that they form one walk. */
export function decodeSegments(count: number, maxSerial: number, segments: Buffer[], swap = !LE): StatCache {
  const { total, nameTotal } = segmentTotals(segments);
  if (total !== count || count < 1) throw corrupt(`${total} entries where ${count} were recorded`);
  const c = emptyCache(count, nameTotal, maxSerial);
  const children = new Uint32Array(count);
  copySegments(c, children, segments, swap);
  setParents(c, children);
  if (!(maxSerial >= 1 && maxSerial <= 0xffffffff)) throw corrupt('bad serial high-water mark');
  for (let i = 0; i < count; i++) if (c.serial[i]! < 1 || c.serial[i]! > maxSerial) throw corrupt('a serial above the high-water mark');
  for (let i = 0; i < count; i++) if (children[i]! > 0 && c.kind[i] !== WalkKind.Dir) throw corrupt('entries under a non-directory');
  const segEnds: number[] = [];
  let end = 0;
  for (const seg of segments) segEnds.push((end += seg.readUInt32LE(0)));
  c.stored = { ends: segEnds, ids: [], children };
  return c;
}

const segmentId = (seg: Buffer): Buffer => objectId(SEGMENT_TAG, seg).subarray(0, 16);

/**
 * First u32 (LE) of a stored segment row that holds a zstd frame of the segment (format 3): a
 * plain segment starts with its entry count, at most SEGMENT_MAX. The stat columns compress
 * about 3.4× (565 → 165 kB at 10,000 paths), which a Store otherwise keeps per Workspace.
 */
const PACKED_SEGMENT = 0xffffffff;
/** A segment is at most this big: SEGMENT_MAX entries of ENTRY_BYTES and a 255-byte name. */
const SEGMENT_BYTES_MAX = 4 + SEGMENT_MAX * (ENTRY_BYTES + 255);

/** The row bytes of a segment: `u32 PACKED_SEGMENT ‖ u32 length ‖ zstd frame`, or the segment itself where that is not smaller. */
export function packSegment(seg: Buffer): Buffer {
  const frame = zstdCompress(seg, 1);
  if (frame.length + 8 >= seg.length) return seg;
  const out = Buffer.allocUnsafe(8 + frame.length);
  out.writeUInt32LE(PACKED_SEGMENT, 0);
  out.writeUInt32LE(seg.length, 4);
  frame.copy(out, 8);
  return out;
}

/** A segment from its row bytes (either form); its id is checked by the caller. */
export function unpackSegment(row: Buffer): Buffer {
  if (row.length < 8 || row.readUInt32LE(0) !== PACKED_SEGMENT) return row;
  const size = row.readUInt32LE(4);
  if (size > SEGMENT_BYTES_MAX) throw corrupt('oversized segment');
  try {
    return zstdDecompress(row.subarray(8), size);
  } catch (e) {
    throw corrupt(`a segment does not decode (${(e as Error).message})`);
  }
}

/**
 * Caches this process saved or loaded last, by Store file and Workspace, with the segment list
 * they were stored under. The list names every segment by a hash of its bytes, so when the
 * stored list still equals it the stored cache is this one, whoever wrote it since: loading is
 * then one row read instead of all segments. A few Workspaces are kept (~60 bytes per path).
 */
const recent = new Map<string, { count: number; maxSerial: number; segments: Buffer; cache: StatCache }>();
const RECENT_MAX = 8;

function remember(store: Store, workspaceId: Buffer, entry: { count: number; maxSerial: number; segments: Buffer; cache: StatCache }): void {
  const key = `${store.path}\0${workspaceId.toString('hex')}`;
  recent.delete(key);
  recent.set(key, entry);
  if (recent.size > RECENT_MAX) recent.delete(recent.keys().next().value!);
}

/** Whether `c` (as loadCache returned it) is still the Workspace's stored cache: no commit or refresh replaced it since. */
export function cacheIsStored(store: Store, workspaceId: Buffer, c: StatCache): boolean {
  const head = prepared(store.db, 'SELECT count, segments FROM workspace_caches WHERE workspace_id = ?').get(workspaceId) as { count: number; segments: Buffer } | undefined;
  return head !== undefined && c.stored !== undefined && head.count === c.count && head.segments.equals(Buffer.concat(c.stored.ids));
}

/** Forgets the caches kept in memory: the next loads read the stored segments. */
export function forgetRecentCaches(): void {
  recent.clear();
}

export function loadCache(store: Store, workspaceId: Buffer): StatCache {
  return store.read(() => {
    const head = prepared(store.db, 'SELECT count, max_serial AS maxSerial, segments FROM workspace_caches WHERE workspace_id = ?').get(workspaceId) as
      | { count: number; maxSerial: number; segments: Buffer }
      | undefined;
    if (!head || head.segments.length % 16 !== 0) throw corrupt('no segment list');
    const known = recent.get(`${store.path}\0${workspaceId.toString('hex')}`);
    if (known && known.count === head.count && known.maxSerial === head.maxSerial && known.segments.equals(head.segments)) return known.cache;
    const rows = prepared(store.db, 'SELECT id, data FROM workspace_entries WHERE workspace_id = ?', 'raw').all(workspaceId) as [Buffer, Buffer][];
    const byId = new Map<string, Buffer>();
    for (const [id, data] of rows) byId.set(id.toString('latin1'), data);
    const segments: Buffer[] = [];
    for (let o = 0; o < head.segments.length; o += 16) {
      const id = head.segments.subarray(o, o + 16);
      const row = byId.get(id.toString('latin1'));
      if (!row) throw corrupt('a segment is missing');
      const data = unpackSegment(row);
      if (!segmentId(data).equals(id)) throw corrupt('a segment does not match its id');
      segments.push(data);
    }
    const c = decodeSegments(head.count, head.maxSerial, segments);
    for (let o = 0; o < head.segments.length; o += 16) c.stored!.ids.push(head.segments.subarray(o, o + 16));
    remember(store, workspaceId, { count: head.count, maxSerial: head.maxSerial, segments: Buffer.from(head.segments), cache: c });
    return c;
  });
}

/**
 * The id of new segment [s, e) when its bytes are those of a stored segment: same boundaries,
 * every entry unchanged at the same place, same entry counts. Saves encoding and hashing it.
 */
function reusedId(lin: CacheLineage, children: Uint32Array, s: number, e: number, startOf: Map<number, number>): Buffer | undefined {
  const os = lin.oldIndex[s]!;
  const k = startOf.get(os);
  if (k === undefined) return undefined;
  const st = lin.old.stored!;
  if (st.ends[k]! - os !== e - s) return undefined;
  const oldChildren = st.children;
  for (let i = s; i < e; i++) {
    if (lin.changed[i] || lin.oldIndex[i] !== os + (i - s) || children[i] !== oldChildren[os + (i - s)]) return undefined;
  }
  return st.ids[k];
}

/** Stored segment start → its index. */
function segmentStarts(ends: number[]): Map<number, number> {
  const startOf = new Map<number, number>();
  let start = 0;
  ends.forEach((end, k) => {
    startOf.set(start, k);
    start = end;
  });
  return startOf;
}

/**
 * Deletes the Workspace's segment rows not in `fresh` and writes those of `fresh` not stored
 * yet (`fresh`: id → its packed row, or the entry range to encode it from); returns rows written.
 */
function writeSegmentRows(store: Store, workspaceId: Buffer, c: StatCache, children: Uint32Array, fresh: Map<string, Buffer | [number, number]>): number {
  const stored = prepared(store.db, 'SELECT id FROM workspace_entries WHERE workspace_id = ?', 'pluck').all(workspaceId) as Buffer[];
  const del = prepared(store.db, 'DELETE FROM workspace_entries WHERE workspace_id = ? AND id = ?');
  for (const id of stored) {
    const key = id.toString('latin1');
    if (fresh.has(key)) fresh.delete(key);
    else del.run(workspaceId, id);
  }
  const put = prepared(store.db, 'INSERT INTO workspace_entries (workspace_id, id, data) VALUES (?, ?, ?)');
  let written = 0;
  for (const [key, v] of fresh) {
    // A reused id whose row is gone (this cache was rewritten since it was loaded): encode it.
    put.run(workspaceId, Buffer.from(key, 'latin1'), Buffer.isBuffer(v) ? v : packSegment(encodeSegment(c, children, v[0], v[1])));
    written++;
  }
  return written;
}

/** A cache encoded for saving (cachePlan), written by writeCache. */
export interface CachePlan {
  readonly cache: StatCache;
  readonly children: Uint32Array;
  readonly ends: number[];
  readonly ids: Buffer[];
  /** id → its packed row, or the entry range of a reused id (encoded only if its row is gone). */
  readonly fresh: Map<string, Buffer | [number, number]>;
  readonly encoded: number;
}

/**
 * Encodes, hashes and compresses the segments of `c` not stored yet, touching no table: a commit
 * does this before it takes the write lock. With `lineage`, segments provably equal to stored ones
 * are not even encoded.
 */
export function cachePlan(c: StatCache, lineage?: CacheLineage): CachePlan {
  const st = lineage?.old.stored && lineage.old.stored.ids.length === lineage.old.stored.ends.length ? lineage.old.stored : undefined;
  // Same paths, parents and inodes as the stored cache (statsChanged shares those arrays):
  // same segment boundaries and entry counts, so a segment is reused unless an entry in it changed.
  const sameShape = st !== undefined && c.count === lineage!.old.count && c.ino === lineage!.old.ino && c.parent === lineage!.old.parent && c.names === lineage!.old.names;
  const children = sameShape ? st.children : childCounts(c);
  const ids: Buffer[] = [];
  const fresh = new Map<string, Buffer | [number, number]>();
  // Stored segment start → its index, when the stored layout is known.
  const startOf = st && !sameShape ? segmentStarts(st.ends) : new Map<number, number>();
  let s = 0;
  let encoded = 0;
  const ends = sameShape ? st.ends : segmentEnds(c);
  for (let k = 0; k < ends.length; k++) {
    const e = ends[k]!;
    let id: Buffer | undefined;
    if (sameShape) {
      const hit = lineage!.changed.indexOf(1, s);
      if (hit < 0 || hit >= e) id = st.ids[k];
    } else if (lineage && startOf.size > 0) id = reusedId(lineage, children, s, e, startOf);
    let row: Buffer | null = null;
    if (!id) {
      const seg = encodeSegment(c, children, s, e);
      id = segmentId(seg);
      row = packSegment(seg);
      encoded++;
    }
    ids.push(id);
    const key = id.toString('latin1');
    if (row || !fresh.has(key)) fresh.set(key, row ?? [s, e]);
    s = e;
  }
  return { cache: c, children, ends, ids, fresh, encoded };
}

/**
 * Replaces the Workspace's cache with `plan`, inside the caller's write transaction: writes the
 * segments not stored yet and deletes the ones no longer listed, so an unchanged stretch of the
 * tree costs nothing.
 */
export function writeCache(store: Store, workspaceId: Buffer, plan: CachePlan): { segments: number; encoded: number; written: number } {
  const { cache: c, children, ends, ids } = plan;
  const written = writeSegmentRows(store, workspaceId, c, children, new Map(plan.fresh));
  const list = Buffer.concat(ids);
  prepared(store.db, 'INSERT OR REPLACE INTO workspace_caches (workspace_id, count, max_serial, segments) VALUES (?, ?, ?, ?)').run(workspaceId, c.count, c.maxSerial, list);
  // If the transaction rolls back, the stored list differs and loadCache ignores this one.
  const kept: StatCache = { ...c, stored: { ends, ids: ids.map((_, k) => list.subarray(16 * k, 16 * k + 16)), children } };
  remember(store, workspaceId, { count: c.count, maxSerial: c.maxSerial, segments: list, cache: kept });
  return { segments: ids.length, encoded: plan.encoded, written };
}

/** Replaces the Workspace's cache, inside the caller's write transaction (cachePlan, then writeCache). */
export function saveCache(store: Store, workspaceId: Buffer, c: StatCache, lineage?: CacheLineage): { segments: number; encoded: number; written: number } {
  return writeCache(store, workspaceId, cachePlan(c, lineage));
}

/** Deletes a Workspace's cache, inside the caller's write transaction. */
export function dropCache(store: Store, workspaceId: Buffer): void {
  recent.delete(`${store.path}\0${workspaceId.toString('hex')}`);
  store.db.prepare('DELETE FROM workspace_entries WHERE workspace_id = ?').run(workspaceId);
  store.db.prepare('DELETE FROM workspace_caches WHERE workspace_id = ?').run(workspaceId);
}
