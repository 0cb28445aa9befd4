/**
 * How repack (repack.ts) lays out what it rewrites: groups become frames, frames and objects
 * stored on their own become pack rows. Same codecs as the writer (docs/FORMAT.md, *repacked rows*).
 */
import { zstdCompressResult, zstdCompressStart, zstdCompressWith } from '../native/zstd.js';
import { Codec, KEEP_COMPRESSED, looksRandom } from './codec.js';
import type { Locator } from './objects.js';
import { CHUNK_FRAME_TARGET } from './schema.js';

/** An object as the repack's snapshot found it (its index row). */
export interface Planned extends Locator {
  id: Buffer;
}

/** A frame of a new row, and the objects it holds with their new locators relative to the frame. */
export interface Part {
  bytes: Buffer;
  /** [object, codec, offset within the part, length, at, base (delta bases or dictionary id, else null)] */
  entries: [Planned, Codec, number, number, number, Buffer | null][];
}

/** A group being filled: objects whose canonical bytes become one frame. */
export interface OpenGroup {
  items: { p: Planned; data: Buffer }[];
  bytes: number;
}

export function newGroup(): OpenGroup {
  return { items: [], bytes: 0 };
}

/** A raw part as one part per object. */
export function splitRaw(part: Part): Part[] {
  return part.entries.map(([p, , off, len]) => ({ bytes: part.bytes.subarray(off, off + len), entries: [[p, Codec.Raw, 0, len, 0, null]] }));
}

export function rawPart(g: OpenGroup): Part {
  let off = 0;
  const entries: Part['entries'] = g.items.map(({ p, data }) => {
    const e: Part['entries'][number] = [p, Codec.Raw, off, data.length, 0, null];
    off += data.length;
    return e;
  });
  return { bytes: Buffer.concat(g.items.map((i) => i.data)), entries };
}

import type { Dictionary } from './dictionary.js';

/** A group whose frame the addon's compression threads are making (startFrame). */
export interface FrameJob {
  g: OpenGroup;
  job: number;
  level: number;
  dict?: Dictionary;
}

/**
 * Starts compressing the group as one zstd frame (with `dict`, when given: codec 3) on the addon's
 * compression threads, which take as many cores as there are groups waiting: a repack's batch
 * starts its groups as it seals them and goes on reading while they compress.
 */
export function startFrame(g: OpenGroup, level: number, dict?: Dictionary): FrameJob {
  return { g, job: zstdCompressStart(Buffer.concat(g.items.map((i) => i.data), g.bytes), level, dict), level, dict };
}

/** The frame of a started group, or the group raw where compression does not pay (KEEP_COMPRESSED). */
export function finishFrame({ g, job, level, dict }: FrameJob): Part {
  // A result the addon no longer holds (zstdCompressResult) is compressed here instead.
  const z = zstdCompressResult(job) ?? zstdCompressWith(Buffer.concat(g.items.map((i) => i.data), g.bytes), level, dict);
  if (z.length > g.bytes * KEEP_COMPRESSED) return rawPart(g);
  const codec = dict ? Codec.Dict : Codec.Zstd;
  const base = dict ? dict.id : null;
  let at = 0;
  const entries: Part['entries'] = g.items.map(({ p, data }) => {
    const e: Part['entries'][number] = [p, codec, 0, z.length, at, base];
    at += data.length;
    return e;
  });
  return { bytes: z, entries };
}

/** Each group as one zstd frame, or raw where compression does not pay (startFrame, finishFrame). */
export function frames(groups: OpenGroup[], level: number, dict?: Dictionary): Part[] {
  return groups.map((g) => startFrame(g, level, dict)).map(finishFrame);
}

/**
 * Frames of a repacked chunk row: the writer's CHUNK_FRAME_TARGET (256 KiB). On the real-tree
 * slice's large files (bundles, source maps) level 19 stored 6.03 MB in 64 KiB frames, 5.49 MB in
 * 256 KiB and 5.20 MB in 1 MiB; a random read of a large file decodes up to 256 KiB.
 */
export const REPACK_CHUNK_FRAME = CHUNK_FRAME_TARGET;

/**
 * Starts a chunk row's chunks, in order, re-cut into frames of about REPACK_CHUNK_FRAME plain
 * bytes, compressed with the Store's dictionary when there is one (as the import's chunk frames
 * are: at level 19 it stored a sample of the real tree's chunks 1.9 % smaller than without it,
 * in 18 % less CPU); random groups stay raw. finishChunkFrames gives the row's parts.
 */
export function startChunkFrames(items: { p: Planned; data: Buffer }[], level: number, dict?: Dictionary): (FrameJob | Part)[] {
  const groups: OpenGroup[] = [];
  let g = newGroup();
  for (const it of items) {
    g.items.push(it);
    g.bytes += it.data.length;
    if (g.bytes >= REPACK_CHUNK_FRAME) {
      groups.push(g);
      g = newGroup();
    }
  }
  if (g.items.length > 0) groups.push(g);
  return groups.map((x) => (looksRandom(Buffer.concat(x.items.map((i) => i.data), x.bytes)) ? rawPart(x) : startFrame(x, level, dict)));
}

export function finishChunkFrames(row: (FrameJob | Part)[]): Part[] {
  return row.map((x) => ('job' in x ? finishFrame(x) : x));
}

/** A record's bytes besides the blob: header, serial types. */
const RECORD_OVERHEAD = 5;
/**
 * SQLite's table-leaf rule for a row larger than a page: the leaf keeps
 * `minLocal + (size - minLocal) % overflow` bytes (or minLocal, when that is too large for a
 * leaf), the rest fills whole overflow pages of `overflow` bytes.
 */
function leafGeometry(pageSize: number): { overflow: number; minLocal: number } {
  return { overflow: pageSize - 4, minLocal: Math.floor(((pageSize - 12) * 32) / 255) - 23 };
}
/** A row whose leaf part is within this many bytes of minLocal is close enough. */
const FILL_TOLERANCE = 48;

/**
 * Parts packed into rows of about `target` stored bytes, `main` in order. SQLite stores a large
 * row as whole overflow pages plus a remainder in its table leaf, and the leaf pages' unused
 * space was ~0.9 % of the repacked edit-history Store (remainders of 1–8 KiB pack poorly). So
 * once a row reaches the target it is topped up from `pool` (objects stored on their own:
 * deltas, raw objects; any order works for them) until its remainder is the least SQLite allows.
 * `pool` is sorted by size, descending, and shared between calls: with `rest`, what is left
 * makes rows of its own.
 */
export function assemble(main: Part[], pool: Part[], target: number, rest: boolean, pageSize: number): Part[][] {
  const { overflow, minLocal } = leafGeometry(pageSize);
  const take = (need: number): Part | undefined => {
    // The largest filler that fits: pool is sorted by size, descending.
    let lo = 0;
    let hi = pool.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (pool[mid]!.bytes.length > need) lo = mid + 1;
      else hi = mid;
    }
    return lo < pool.length ? pool.splice(lo, 1)[0] : undefined;
  };
  const rows: Part[][] = [];
  let cur: Part[] = [];
  let bytes = 0;
  const close = () => {
    if (bytes + RECORD_OVERHEAD > overflow) {
      for (;;) {
        const need = (overflow - ((bytes + RECORD_OVERHEAD - minLocal) % overflow)) % overflow;
        if (need <= FILL_TOLERANCE) break;
        const f = take(need);
        if (!f) break;
        cur.push(f);
        bytes += f.bytes.length;
      }
    }
    rows.push(cur);
    cur = [];
    bytes = 0;
  };
  const add = (p: Part) => {
    cur.push(p);
    bytes += p.bytes.length;
    if (bytes >= target) close();
  };
  for (const p of main) add(p);
  while (rest && pool.length > 0) add(pool.shift()!);
  if (cur.length > 0) close();
  return rows;
}
