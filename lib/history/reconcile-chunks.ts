/**
 * Three-way merge of large files at chunk level, without loading them: the three versions' chunk
 * lists are aligned (reconcile-align.ts), each region is taken from the side that changed it,
 * and the result is streamed into the Store (ContentStream), reusing the stored chunks.
 *
 * Where both sides changed chunks of one region (or of touching regions), the region alone (a
 * few chunks per side) is merged byte by byte under the byte-level rule (reconcile-bytes.ts);
 * a region too large for that, or whose bytes both sides changed, is a conflict reported with
 * its byte ranges in each version. Container formats stay excluded as for smaller files.
 */
import { ContentStream } from '../store/content-stream.js';
import { ContentForm, type Inode } from '../store/tree/inode.js';
import { ObjectKind, type ObjectReader, type ObjectWriter } from '../store/objects.js';
import type { StoredContent } from '../store/import/content.js';
import { alignChunks, chunkBytes, loadChunkList, sameChunk, type ChunkList, type Hunk } from './reconcile-align.js';
import { containerFormat, mergeByteRegions } from './reconcile-bytes.js';

/** Byte ranges [start, end) of one conflicting region in each version. */
export interface ByteConflict {
  base: [number, number];
  head: [number, number];
  workspace: [number, number];
}

export type ChunkMerge = { ok: true; stored: StoredContent; size: number } | { ok: false; message: string; ranges: ByteConflict[] };

/** Largest region (per version) merged byte by byte inside a chunk-level merge. */
export const REGION_MERGE_MAX = 16 * 1024 * 1024;

/** A region of the result: chunks [from, to) of one version, or a region both sides changed. */
type Piece = { list: ChunkList; from: number; to: number } | { both: ByteConflict; o: [number, number]; h: [number, number]; w: [number, number] };

/** Groups both sides' hunks into the regions of the result (diff3 over chunk ids). */
function plan(o: ChunkList, h: ChunkList, w: ChunkList): Piece[] {
  const lists = [h, w];
  const hunks = [...alignChunks(o, h).map((x) => ({ ...x, side: 0 })), ...alignChunks(o, w).map((x) => ({ ...x, side: 1 }))].sort((a, b) => a.oStart - b.oStart || a.side - b.side);
  const shift = [0, 0];
  const pieces: Piece[] = [];
  let at = 0;
  for (let k = 0; k < hunks.length; ) {
    const group: (Hunk & { side: number })[] = [hunks[k++]!];
    let start = group[0]!.oStart;
    let end = group[0]!.oEnd;
    // Hunks that overlap or touch go together: an edit next to another has no one right order.
    while (k < hunks.length && hunks[k]!.oStart <= end) {
      end = Math.max(end, hunks[k]!.oEnd);
      group.push(hunks[k++]!);
    }
    start = Math.min(...group.map((g) => g.oStart));
    if (start > at) pieces.push({ list: o, from: at, to: start });
    at = end;
    const ranges = [0, 1].map((side): [number, number] => {
      const mine = group.filter((g) => g.side === side);
      if (mine.length === 0) return [start + shift[side]!, end + shift[side]!];
      const first = mine[0]!;
      const last = mine[mine.length - 1]!;
      for (const g of mine) shift[side]! += g.sEnd - g.sStart - (g.oEnd - g.oStart);
      return [first.sStart - (first.oStart - start), last.sEnd + (end - last.oEnd)];
    });
    const sides = new Set(group.map((g) => g.side));
    if (sides.size === 1) {
      const side = group[0]!.side;
      pieces.push({ list: lists[side]!, from: ranges[side]![0], to: ranges[side]![1] });
      continue;
    }
    const [hr, wr] = ranges as [[number, number], [number, number]];
    if (sameRun(h, hr, w, wr)) {
      pieces.push({ list: h, from: hr[0], to: hr[1] });
      continue;
    }
    const bytes = (l: ChunkList, r: [number, number]): [number, number] => [l.at(r[0]), l.at(r[1])];
    pieces.push({ both: { base: bytes(o, [start, end]), head: bytes(h, hr), workspace: bytes(w, wr) }, o: [start, end], h: hr, w: wr });
  }
  if (at < o.count) pieces.push({ list: o, from: at, to: o.count });
  return pieces;
}

function sameRun(a: ChunkList, ar: [number, number], b: ChunkList, br: [number, number]): boolean {
  if (ar[1] - ar[0] !== br[1] - br[0]) return false;
  for (let i = 0; i < ar[1] - ar[0]; i++) if (!sameChunk(a, ar[0] + i, b, br[0] + i)) return false;
  return true;
}

/** The start of a file's content, enough to tell its format. */
function magic(objects: ObjectReader, list: ChunkList): Buffer {
  return list.count === 0 ? Buffer.alloc(0) : objects.get(list.id(0), ObjectKind.Chunk).subarray(0, 16);
}

/** Merges the bytes of a region both sides changed, or says why not. */
function mergeRegion(objects: ObjectReader, lists: [ChunkList, ChunkList, ChunkList], p: Extract<Piece, { both: unknown }>): Buffer | string {
  const spans = [p.both.base, p.both.head, p.both.workspace];
  if (spans.some(([s, e]) => e - s > REGION_MERGE_MAX)) return `both sides changed the region at bytes ${p.both.base[0]}-${p.both.base[1]} and it is too large to merge byte by byte`;
  const [o, h, w] = [p.o, p.h, p.w].map((r, i) => chunkBytes(objects, lists[i]!, r[0], r[1]));
  const m = mergeByteRegions(o!, h!, w!);
  if (m.ok) return m.bytes;
  // The rule's message counts from the region's start: from the file's, here.
  const shift = (n: string) => String(Number(n) + p.both.base[0]);
  return m.message.replace(/(bytes (?:near )?)(\d+)(?:-(\d+))?/, (_s, word: string, a: string, b?: string) => `${word}${shift(a)}${b === undefined ? '' : `-${shift(b)}`}`);
}

/**
 * The chunk-level merge of base → head and base → workspace content of three files stored as
 * Extents, written through `w` (the caller rolls back on a conflict).
 */
export function mergeChunked(objects: ObjectReader, w: ObjectWriter, b: Inode, h: Inode, ws: Inode): ChunkMerge {
  if (![b, h, ws].every((f) => f.form === ContentForm.Extents)) {
    return { ok: false, message: 'changed on both sides, one side rewrote it whole', ranges: [{ base: [0, b.size], head: [0, h.size], workspace: [0, ws.size] }] };
  }
  const lists: [ChunkList, ChunkList, ChunkList] = [loadChunkList(objects, b), loadChunkList(objects, h), loadChunkList(objects, ws)];
  const format = lists.map((l) => containerFormat(magic(objects, l))).find((f) => f !== undefined);
  if (format) return { ok: false, message: `a ${format} file changed on both sides: its bytes refer to each other, so it is never merged by ranges`, ranges: [{ base: [0, b.size], head: [0, h.size], workspace: [0, ws.size] }] };
  const pieces = plan(...lists);
  // Written as it goes; once a region conflicts, the rest is only checked (the caller rolls back).
  const conflicts: { message: string; range: ByteConflict }[] = [];
  const out = new ContentStream(w);
  for (const p of pieces) {
    if ('both' in p) {
      const r = mergeRegion(objects, lists, p);
      if (typeof r === 'string') conflicts.push({ message: r, range: p.both });
      else if (conflicts.length === 0) out.bytes(r);
    } else if (conflicts.length === 0) {
      const l = p.list;
      for (let i = p.from; i < p.to; i++) out.chunk(l.id(i), l.lengths[i]!, i === l.count - 1, () => objects.get(l.id(i), ObjectKind.Chunk));
    }
  }
  if (conflicts.length > 0) {
    const more = conflicts.length > 1 ? ` (and ${conflicts.length - 1} more region${conflicts.length > 2 ? 's' : ''})` : '';
    return { ok: false, message: `${conflicts[0]!.message}${more}`, ranges: conflicts.map((c) => c.range) };
  }
  return { ok: true, stored: out.finish(), size: out.size };
}
