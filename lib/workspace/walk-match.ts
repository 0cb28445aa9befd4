/**
 * Matching a walk with the stat cache by path: both share one order (each directory's children
 * contiguous and sorted by name bytes), so paths are matched by merging sibling lists, and stat
 * fields are read as 32-bit words of typed arrays without per-path strings.
 */
import { endianness } from 'node:os';
import { WalkKind, type WalkResult } from '../native/walk.js';

const LE = endianness() === 'LE';
export const LO = LE ? 0 : 1;
export const HI = LE ? 1 : 0;

export const words = (a: BigInt64Array | BigUint64Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length * 2);

/** The columns of a walk of `count` entries whose names take `nameBytes`, to be filled. */
export function allocWalk(count: number, nameBytes: number): WalkResult {
  return {
    count,
    names: Buffer.allocUnsafe(nameBytes),
    nameOffsets: new Uint32Array(count + 1),
    parent: new Int32Array(count),
    kind: new Uint8Array(count),
    mode: new Uint32Array(count),
    ino: new BigUint64Array(count),
    size: new BigInt64Array(count),
    mtimeNs: new BigInt64Array(count),
    ctimeNs: new BigInt64Array(count),
  };
}

/** Drops entries with keep[i] = 0 and everything below them; returns the walk and new → old indices. */
export function compactWalk(w: WalkResult, keep: Uint8Array): { walk: WalkResult; from: Int32Array } {
  const n = w.count;
  const to = new Int32Array(n).fill(-1);
  let count = 0;
  let nameBytes = 0;
  for (let i = 0; i < n; i++) {
    if (!keep[i] || (i > 0 && to[w.parent[i]!]! < 0)) continue;
    to[i] = count++;
    nameBytes += w.nameOffsets[i + 1]! - w.nameOffsets[i]!;
  }
  const from = new Int32Array(count);
  const out = allocWalk(count, nameBytes);
  let off = 0;
  for (let i = 0; i < n; i++) {
    const k = to[i]!;
    if (k < 0) continue;
    from[k] = i;
    off += w.names.copy(out.names, off, w.nameOffsets[i]!, w.nameOffsets[i + 1]!);
    out.nameOffsets[k + 1] = off;
    out.parent[k] = i === 0 ? -1 : to[w.parent[i]!]!;
    out.kind[k] = w.kind[i]!;
    out.mode[k] = w.mode[i]!;
    out.ino[k] = w.ino[i]!;
    out.size[k] = w.size[i]!;
    out.mtimeNs[k] = w.mtimeNs[i]!;
    out.ctimeNs[k] = w.ctimeNs[i]!;
  }
  return { walk: out, from };
}

/** [start, end) of each directory's children (contiguous in walk order); empty when none. */
function childRanges(w: WalkResult): { start: Int32Array; end: Int32Array } {
  const start = new Int32Array(w.count);
  const end = new Int32Array(w.count);
  const parent = w.parent;
  for (let i = 1; i < w.count; i++) {
    const p = parent[i]!;
    if (end[p] === 0) start[p] = i;
    end[p] = i + 1;
  }
  return { start, end };
}

/** Buffer.compare order of name i of a and name j of b. */
function compareNames(a: WalkResult, i: number, b: WalkResult, j: number): number {
  const an = a.names;
  const bn = b.names;
  let x = a.nameOffsets[i]!;
  let y = b.nameOffsets[j]!;
  const lx = a.nameOffsets[i + 1]! - x;
  const ly = b.nameOffsets[j + 1]! - y;
  const end = x + (lx < ly ? lx : ly);
  for (; x < end; x++, y++) {
    const d = an[x]! - bn[y]!;
    if (d !== 0) return d;
  }
  return lx - ly;
}

/** For each entry of `now`, the entry of `old` at the same path, or -1: a merge of sibling lists. */
export function matchPaths(now: WalkResult, old: WalkResult): Int32Array {
  const match = new Int32Array(now.count).fill(-1);
  if (old.count === 0) return match;
  const a = childRanges(now);
  const b = childRanges(old);
  match[0] = 0;
  for (let d = 0; d < now.count; d++) {
    const od = match[d]!;
    if (od < 0 || now.kind[d] !== WalkKind.Dir) continue;
    let i = a.start[d]!;
    const ie = a.end[d]!;
    let j = b.start[od]!;
    const je = b.end[od]!;
    while (i < ie && j < je) {
      const c = compareNames(now, i, old, j);
      if (c === 0) match[i++] = j++;
      else if (c < 0) i++;
      else j++;
    }
  }
  return match;
}

/** A Map key for (kind, inode): a number while it fits, text beyond 2^50. */
export function inoKey(kind: number, lo: number, hi: number): number | string {
  return hi < 0x40000 ? (hi * 0x100000000 + lo) * 8 + kind : `${kind}:${hi}:${lo}`;
}
