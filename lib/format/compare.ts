/**
 * Byte order of tree keys. Buffer.compare calls into C++ for every comparison; tree pages compare
 * keys of a few dozen bytes (a parent's serial and a name) millions of times in a large commit or
 * diff, and a loop here takes about half of that call's time for such keys (docs/BENCHMARKS.md,
 * "Tree keys compared in JavaScript").
 */

/** Negative, zero or positive as `a` sorts before, with or after `b` (Buffer.compare's order, not its values). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}
