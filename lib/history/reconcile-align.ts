/**
 * Aligning two versions of a large file by their chunk lists. Chunks are content-defined, so
 * after an edit the chunker meets the old cuts again within a chunk or two: the versions share
 * every chunk away from the edits, and a diff of the id lists (not of the bytes) finds where each
 * side changed the file. Memory is the chunk lists (about 40 bytes per 16 KiB chunk), never the
 * content.
 */
import { LayerFsError } from '../errors.js';
import { ContentForm, type Inode } from '../store/tree/inode.js';
import { ObjectKind, type ObjectReader } from '../store/objects.js';
import { loadExtentNode } from '../store/tree/extent-check.js';

/** A file's chunks in order: ids (32 bytes each), lengths and byte offsets. */
export class ChunkList {
  count = 0;
  ids = Buffer.allocUnsafe(32 * 1024);
  lengths = new Uint32Array(1024);
  /** offsets[i]: where chunk i starts; offsets[count]: the file size. */
  offsets = new Float64Array(1025);

  push(id: Buffer, length: number): void {
    if (this.count === this.lengths.length) {
      const ids = Buffer.allocUnsafe(this.ids.length * 2);
      this.ids.copy(ids);
      this.ids = ids;
      const lengths = new Uint32Array(this.lengths.length * 2);
      lengths.set(this.lengths);
      this.lengths = lengths;
      const offsets = new Float64Array(this.offsets.length * 2 - 1);
      offsets.set(this.offsets);
      this.offsets = offsets;
    }
    id.copy(this.ids, this.count * 32);
    this.lengths[this.count] = length;
    this.offsets[this.count + 1] = this.offsets[this.count]! + length;
    this.count++;
  }

  id(i: number): Buffer {
    return this.ids.subarray(i * 32, i * 32 + 32);
  }

  /** A 48-bit key of chunk i's id (ids are hashes: equal keys are checked with `same`). */
  key(i: number): number {
    return this.ids.readUIntBE(i * 32, 6);
  }

  /** Byte offset where chunk i starts (i = count: the size). */
  at(i: number): number {
    return this.offsets[i]!;
  }
}

export function sameChunk(a: ChunkList, i: number, b: ChunkList, j: number): boolean {
  return a.ids.compare(b.ids, j * 32, j * 32 + 32, i * 32, i * 32 + 32) === 0;
}

/** The chunk list of a file stored as Extents, read one extent node at a time. */
export function loadChunkList(objects: ObjectReader, file: Inode): ChunkList {
  if (file.form !== ContentForm.Extents) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'not a chunked file');
  const list = new ChunkList();
  const walk = (id: Buffer, length: number, parentLevel: number | null): void => {
    const node = loadExtentNode(objects, id, length, parentLevel);
    for (let i = 0; i < node.ids.length; i++) {
      if (node.level === 0) list.push(node.ids[i]!, node.lengths[i]!);
      else walk(node.ids[i]!, node.lengths[i]!, node.level);
    }
  };
  walk(file.content!, file.size, null);
  return list;
}

/** The bytes of chunks [from, to) of a list. */
export function chunkBytes(objects: ObjectReader, list: ChunkList, from: number, to: number): Buffer {
  const parts: Buffer[] = [];
  for (let i = from; i < to; i++) parts.push(objects.get(list.id(i), ObjectKind.Chunk));
  return Buffer.concat(parts);
}

/** Chunks [oStart, oEnd) of the base became chunks [sStart, sEnd) of the side. */
export interface Hunk {
  oStart: number;
  oEnd: number;
  sStart: number;
  sEnd: number;
}

/** Longest strictly increasing subsequence of `values` (indices into it). */
function increasingRun(values: number[]): number[] {
  const tails: number[] = [];
  const prev = new Int32Array(values.length).fill(-1);
  for (let i = 0; i < values.length; i++) {
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (values[tails[mid]!]! < values[i]!) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) prev[i] = tails[lo - 1]!;
    tails[lo] = i;
  }
  const out: number[] = [];
  for (let i = tails.length > 0 ? tails[tails.length - 1]! : -1; i >= 0; i = prev[i]!) out.push(i);
  return out.reverse();
}

/**
 * Chunks that occur once in each middle and match: anchors a diff can trust (patience diff).
 * Returned as [base index, side index] pairs, increasing in both.
 */
function anchors(o: ChunkList, s: ChunkList, oFrom: number, oTo: number, sFrom: number, sTo: number): [number, number][] {
  const seen = new Map<number, { o: number; s: number; oCount: number; sCount: number }>();
  for (let i = oFrom; i < oTo; i++) {
    const e = seen.get(o.key(i));
    if (e) e.oCount++;
    else seen.set(o.key(i), { o: i, s: -1, oCount: 1, sCount: 0 });
  }
  for (let j = sFrom; j < sTo; j++) {
    const e = seen.get(s.key(j));
    if (!e) continue;
    e.sCount++;
    e.s = j;
  }
  const pairs: [number, number][] = [];
  for (const e of seen.values()) if (e.oCount === 1 && e.sCount === 1 && sameChunk(o, e.o, s, e.s)) pairs.push([e.o, e.s]);
  pairs.sort((a, b) => a[0] - b[0]);
  return increasingRun(pairs.map((p) => p[1])).map((i) => pairs[i]!);
}

/** The hunks turning base `o` into side `s`, in order, apart by at least one shared chunk. */
export function alignChunks(o: ChunkList, s: ChunkList): Hunk[] {
  const hunks: Hunk[] = [];
  let p = 0;
  while (p < o.count && p < s.count && sameChunk(o, p, s, p)) p++;
  let q = 0;
  while (q < o.count - p && q < s.count - p && sameChunk(o, o.count - 1 - q, s, s.count - 1 - q)) q++;
  const gap = (oFrom: number, oTo: number, sFrom: number, sTo: number): void => {
    while (oFrom < oTo && sFrom < sTo && sameChunk(o, oFrom, s, sFrom)) {
      oFrom++;
      sFrom++;
    }
    while (oFrom < oTo && sFrom < sTo && sameChunk(o, oTo - 1, s, sTo - 1)) {
      oTo--;
      sTo--;
    }
    if (oFrom === oTo && sFrom === sTo) return;
    const last = hunks[hunks.length - 1];
    if (last && last.oEnd === oFrom && last.sEnd === sFrom) {
      last.oEnd = oTo;
      last.sEnd = sTo;
    } else hunks.push({ oStart: oFrom, oEnd: oTo, sStart: sFrom, sEnd: sTo });
  };
  let oAt = p;
  let sAt = p;
  if (p < o.count - q && p < s.count - q) {
    for (const [i, j] of anchors(o, s, p, o.count - q, p, s.count - q)) {
      gap(oAt, i, sAt, j);
      oAt = i + 1;
      sAt = j + 1;
    }
  }
  gap(oAt, o.count - q, sAt, s.count - q);
  return hunks;
}
