/**
 * Three-way merge of binary content at byte level, for files both sides changed in different
 * places (range edits of a disk image, a model file, fixed-size records). The rule a reader can
 * check by hand:
 * - When all three versions have the same length, every byte is taken from the side that changed
 *   it; a byte both sides changed to different values is a conflict. (A byte rewritten with its
 *   old value is no change.)
 * - When a side changed the length, its change is the one region between the longest common
 *   prefix and suffix with the base. It merges with the other side's changed regions only when
 *   at least one unchanged byte separates them (an insertion next to another edit has no one
 *   right order); otherwise it is a conflict.
 * - Formats whose bytes refer to each other (SQLite, zip, gzip, zstd, xz, PDF, …) are never merged
 *   byte by byte: two sides each writing a consistent SQLite file do not add up to one.
 */

/**
 * Larger files are not merged here (the three versions are held in memory) but chunk by chunk
 * (reconcile-chunks.ts), which applies this rule only to the regions both sides changed.
 */
export const BYTE_MERGE_MAX = 64 * 1024 * 1024;

export type ByteMerge = { ok: true; bytes: Buffer } | { ok: false; message: string; ranges?: { head: [number, number]; workspace: [number, number] } };

const CONTAINERS: [string, Buffer][] = [
  ['SQLite', Buffer.from('SQLite format 3\0', 'latin1')],
  ['zip', Buffer.from([0x50, 0x4b, 0x03, 0x04])],
  ['zip', Buffer.from([0x50, 0x4b, 0x05, 0x06])],
  ['gzip', Buffer.from([0x1f, 0x8b])],
  ['zstd', Buffer.from([0x28, 0xb5, 0x2f, 0xfd])],
  ['xz', Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])],
  ['bzip2', Buffer.from('BZh', 'latin1')],
  ['7z', Buffer.from([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c])],
  ['PDF', Buffer.from('%PDF-', 'latin1')],
  ['PNG', Buffer.from([0x89, 0x50, 0x4e, 0x47])],
];

/** The container format a file starts with, if any. */
export function containerFormat(data: Buffer): string | undefined {
  for (const [name, magic] of CONTAINERS) if (data.length >= magic.length && data.subarray(0, magic.length).equals(magic)) return name;
  return undefined;
}

/** A changed region of the base, [start, end), and what stands there now. */
interface Region {
  start: number;
  end: number;
  bytes: Buffer;
}

/** The runs of bytes that differ between two versions of one length. */
function changedRuns(base: Buffer, side: Buffer): Region[] {
  const runs: Region[] = [];
  const BLOCK = 4096;
  let open = -1;
  for (let at = 0; at < base.length; at += BLOCK) {
    const end = Math.min(at + BLOCK, base.length);
    if (open < 0 && base.subarray(at, end).equals(side.subarray(at, end))) continue;
    for (let i = at; i < end; i++) {
      const differs = base[i] !== side[i];
      if (differs && open < 0) open = i;
      else if (!differs && open >= 0) {
        runs.push({ start: open, end: i, bytes: side.subarray(open, i) });
        open = -1;
      }
    }
  }
  if (open >= 0) runs.push({ start: open, end: base.length, bytes: side.subarray(open) });
  return runs;
}

/** A length-changing side as one region: what lies between the common prefix and suffix. */
function locatedRegion(base: Buffer, side: Buffer): Region {
  const max = Math.min(base.length, side.length);
  let p = 0;
  while (p < max && base[p] === side[p]) p++;
  let s = 0;
  while (s < max - p && base[base.length - 1 - s] === side[side.length - 1 - s]) s++;
  return { start: p, end: base.length - s, bytes: side.subarray(p, side.length - s) };
}

function regionsOf(base: Buffer, side: Buffer): Region[] {
  return side.length === base.length ? changedRuns(base, side) : [locatedRegion(base, side)];
}

/** Same-length versions: byte by byte. */
function mergeInPlace(base: Buffer, head: Buffer, ws: Buffer): ByteMerge {
  const out = Buffer.from(head);
  for (const r of changedRuns(base, ws)) {
    for (let i = r.start; i < r.end; i++) {
      if (head[i] !== base[i] && head[i] !== ws[i]) {
        let j = i;
        while (j < r.end && head[j] !== base[j] && head[j] !== ws[j]) j++;
        return { ok: false, message: `both sides changed bytes ${i}-${j - 1} differently`, ranges: { head: [i, j], workspace: [r.start, r.end] } };
      }
      out[i] = ws[i]!;
    }
  }
  return { ok: true, bytes: out };
}

/** Applies both sides' regions to the base when each pair is apart by at least one unchanged byte. */
function mergeRegions(base: Buffer, head: Region[], ws: Region[]): ByteMerge {
  const all = [...head.map((r) => ({ r, side: 0 })), ...ws.map((r) => ({ r, side: 1 }))].sort((a, b) => a.r.start - b.r.start || a.r.end - b.r.end || a.side - b.side);
  const last: (Region | undefined)[] = [undefined, undefined];
  const pieces: Buffer[] = [];
  let at = 0;
  for (const { r, side } of all) {
    const other = last[1 - side];
    last[side] = r;
    if (other && r.start <= other.end) {
      if (other.start === r.start && other.end === r.end && other.bytes.equals(r.bytes)) continue; // the same edit on both sides
      const [h, w] = side === 0 ? [r, other] : [other, r];
      return { ok: false, message: `both sides changed bytes near ${r.start} and one of them changed the length (the edits must be apart by at least one unchanged byte)`, ranges: { head: [h.start, h.end], workspace: [w.start, w.end] } };
    }
    pieces.push(base.subarray(at, r.start), r.bytes);
    at = r.end;
  }
  pieces.push(base.subarray(at));
  return { ok: true, bytes: Buffer.concat(pieces) };
}

/** The byte-level three-way merge of `base` → `head` and `base` → `ws` (see the rule above). */
export function mergeBytes(base: Buffer, head: Buffer, ws: Buffer): ByteMerge {
  const format = containerFormat(base) ?? containerFormat(head) ?? containerFormat(ws);
  if (format) return { ok: false, message: `a ${format} file changed on both sides: its bytes refer to each other, so it is never merged byte by byte` };
  return mergeByteRegions(base, head, ws);
}

/**
 * The rule above without the format check, for a region cut out of a larger file (whose format
 * the caller checked at the file's start; a region may start with any bytes).
 */
export function mergeByteRegions(base: Buffer, head: Buffer, ws: Buffer): ByteMerge {
  if (base.length === head.length && base.length === ws.length) return mergeInPlace(base, head, ws);
  return mergeRegions(base, regionsOf(base, head), regionsOf(base, ws));
}
