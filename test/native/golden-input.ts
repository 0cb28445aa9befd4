// The input of the recorded golden vectors (cut points are part of the on-disk format).
/**
 * The input the golden vectors were recorded with (fixtures/chunker-golden.json and the copy-on-write golden tests: xorshift32
 * 13/17/5, 4 bytes little-endian per step). It is part of the recorded format fixture, not a test
 * generator: the vectors pin the on-disk cut points, so their input must never change. Every other
 * test draws from helpers/random.ts.
 */
export function goldenInput(seed: number, length: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0 || 0x9e3779b9;
  const step = () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
  let i = 0;
  for (; i + 4 <= length; i += 4) out.writeUInt32LE(step(), i);
  for (; i < length; i++) out[i] = step() & 0xff;
  return out;
}
