import { seededBytes } from '../helpers/random.js';

export { seededBytes };

/** Deterministic integers in [0, n) from a seed, for split points. */
export function seededInts(count: number, n: number, seed: number): number[] {
  const bytes = seededBytes(seed, count * 4);
  return Array.from({ length: count }, (_, i) => bytes.readUInt32LE(i * 4) % n);
}

export const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
