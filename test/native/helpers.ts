/** Deterministic test data: xorshift32 (Marsaglia 13/17/5), each step gives 4 bytes little-endian. */
export function seededBytes(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0 || 0x9e3779b9;
  let i = 0;
  for (; i + 4 <= length; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out.writeUInt32LE(x, i);
  }
  for (; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/** Deterministic integers in [0, n) from a seed, for split points. */
export function seededInts(count: number, n: number, seed: number): number[] {
  const bytes = seededBytes(count * 4, seed);
  return Array.from({ length: count }, (_, i) => bytes.readUInt32LE(i * 4) % n);
}

export const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
