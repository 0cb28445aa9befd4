// The one seeded pseudo-random generator of the tests and the bench. Fixtures must be
// byte-identical across runs and machines so that results are comparable and a failing seed can be
// replayed, and the bench generates ~430 MB with it in seconds, so this is xoshiro128** (32-bit
// arithmetic via Math.imul, no BigInt in the hot loop) seeded by splitmix64. Not cryptographic;
// never use it for anything but test data.

const MASK64 = (1n << 64n) - 1n;
const GOLDEN64 = 0x9e3779b97f4a7c15n;

/** splitmix64: turns any 64-bit seed (even 0 or 1) into well-mixed state words. */
export function splitmix64(state: bigint): { value: bigint; next: bigint } {
  const next = (state + GOLDEN64) & MASK64;
  let z = next;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  z = z ^ (z >> 31n);
  return { value: z, next };
}

/** xoshiro128**: fast 32-bit generator with 128 bits of state. */
export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  /** Seeds from (seed, stream): each stream (e.g. a file index) is an independent sequence, so
   * any one file can be regenerated without generating the files before it. */
  constructor(seed: number | bigint, stream: number | bigint = 0) {
    let st = (BigInt(seed) ^ (BigInt(stream) * GOLDEN64)) & MASK64;
    const words: number[] = [];
    for (let i = 0; i < 2; i++) {
      const r = splitmix64(st);
      st = r.next;
      words.push(Number(r.value & 0xffffffffn), Number(r.value >> 32n));
    }
    this.s0 = words[0]! | 0;
    this.s1 = words[1]! | 0;
    this.s2 = words[2]! | 0;
    this.s3 = words[3]! | 0;
    // An all-zero state would stay zero forever; splitmix64 makes this practically impossible.
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** Next unsigned 32-bit integer. */
  u32(): number {
    const s1 = this.s1;
    const m = Math.imul(s1, 5);
    const result = Math.imul((m << 7) | (m >>> 25), 9) >>> 0;
    const t = s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = (this.s3 << 11) | (this.s3 >>> 21);
    return result;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.u32() / 4294967296;
  }

  /** Uniform integer in [0, n) for n ≤ 2^32 (the tiny modulo bias is irrelevant for test data). */
  below(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** Standard normal deviate (Box–Muller; one of the pair is discarded for simplicity). */
  normal(): number {
    const u1 = 1 - this.float(); // (0, 1], so log() is finite
    const u2 = this.float();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /** Fills `out` with random words. The bytes are little-endian words on little-endian hosts
   * (x64, arm64): fixtures are reproducible on those, which is every machine we bench on. */
  fillWords(out: Uint32Array): void {
    // Inlined copy of u32() on locals: this loop produces ~215 MB per 100k-file fixture.
    let s0 = this.s0, s1 = this.s1, s2 = this.s2, s3 = this.s3;
    for (let i = 0; i < out.length; i++) {
      const m = Math.imul(s1, 5);
      out[i] = Math.imul((m << 7) | (m >>> 25), 9);
      const t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
    }
    this.s0 = s0;
    this.s1 = s1;
    this.s2 = s2;
    this.s3 = s3;
  }
}

/** A stream of uniform numbers in [0, 1) from `seed` (stream 0): for model tests, which print it. */
export function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.float();
}

/** `n` seeded random bytes, stream `stream` of `seed` (streams are independent sequences). */
export function seededBytes(seed: number, n: number, stream = 0): Buffer {
  const words = new Uint32Array(Math.ceil(n / 4));
  new Rng(seed, stream).fillWords(words);
  return Buffer.from(words.buffer, 0, n);
}
