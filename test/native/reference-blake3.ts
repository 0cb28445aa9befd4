/**
 * A slow, direct transcription of the BLAKE3 specification (unkeyed hash + extended output),
 * used only to check the addon independently of the C sources it compiles.
 */
const IV = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
const PERM = [2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8];
const CHUNK_START = 1;
const CHUNK_END = 2;
const PARENT = 4;
const ROOT = 8;
const CHUNK_LEN = 1024;

const rotr = (x: number, n: number): number => ((x >>> n) | (x << (32 - n))) >>> 0;

function g(s: number[], a: number, b: number, c: number, d: number, mx: number, my: number): void {
  s[a] = (s[a]! + s[b]! + mx) >>> 0;
  s[d] = rotr(s[d]! ^ s[a]!, 16);
  s[c] = (s[c]! + s[d]!) >>> 0;
  s[b] = rotr(s[b]! ^ s[c]!, 12);
  s[a] = (s[a]! + s[b]! + my) >>> 0;
  s[d] = rotr(s[d]! ^ s[a]!, 8);
  s[c] = (s[c]! + s[d]!) >>> 0;
  s[b] = rotr(s[b]! ^ s[c]!, 7);
}

function compress(cv: number[], block: number[], counter: number, blockLen: number, flags: number): number[] {
  const s = [...cv.slice(0, 8), ...IV.slice(0, 4), counter >>> 0, Math.floor(counter / 2 ** 32) >>> 0, blockLen, flags];
  let m = block.slice();
  for (let r = 0; r < 7; r++) {
    g(s, 0, 4, 8, 12, m[0]!, m[1]!);
    g(s, 1, 5, 9, 13, m[2]!, m[3]!);
    g(s, 2, 6, 10, 14, m[4]!, m[5]!);
    g(s, 3, 7, 11, 15, m[6]!, m[7]!);
    g(s, 0, 5, 10, 15, m[8]!, m[9]!);
    g(s, 1, 6, 11, 12, m[10]!, m[11]!);
    g(s, 2, 7, 8, 13, m[12]!, m[13]!);
    g(s, 3, 4, 9, 14, m[14]!, m[15]!);
    m = PERM.map((i) => m[i]!);
  }
  for (let i = 0; i < 8; i++) {
    s[i] = (s[i]! ^ s[i + 8]!) >>> 0;
    s[i + 8] = (s[i + 8]! ^ cv[i]!) >>> 0;
  }
  return s;
}

function words(bytes: Uint8Array): number[] {
  const padded = new Uint8Array(64);
  padded.set(bytes);
  const w: number[] = [];
  for (let i = 0; i < 16; i++) w.push((padded[i * 4]! | (padded[i * 4 + 1]! << 8) | (padded[i * 4 + 2]! << 16) | (padded[i * 4 + 3]! << 24)) >>> 0);
  return w;
}

interface Output {
  cv: number[];
  block: number[];
  counter: number;
  blockLen: number;
  flags: number;
}

const chainingValue = (o: Output): number[] => compress(o.cv, o.block, o.counter, o.blockLen, o.flags).slice(0, 8);

function chunkOutput(input: Uint8Array, chunkCounter: number): Output {
  let cv = IV.slice();
  const nBlocks = Math.max(1, Math.ceil(input.length / 64));
  for (let b = 0; b < nBlocks - 1; b++) {
    cv = compress(cv, words(input.subarray(b * 64, b * 64 + 64)), chunkCounter, 64, b === 0 ? CHUNK_START : 0).slice(0, 8);
  }
  const last = input.subarray((nBlocks - 1) * 64);
  return { cv, block: words(last), counter: chunkCounter, blockLen: last.length, flags: (nBlocks === 1 ? CHUNK_START : 0) | CHUNK_END };
}

function node(input: Uint8Array, chunkOffset: number): Output {
  if (input.length <= CHUNK_LEN) return chunkOutput(input, chunkOffset);
  // The left subtree holds the largest power-of-two number of whole chunks that leaves at least
  // one byte for the right.
  let leftChunks = 1;
  while ((leftChunks * 2) * CHUNK_LEN < input.length) leftChunks *= 2;
  const left = chainingValue(node(input.subarray(0, leftChunks * CHUNK_LEN), chunkOffset));
  const right = chainingValue(node(input.subarray(leftChunks * CHUNK_LEN), chunkOffset + leftChunks));
  return { cv: IV.slice(), block: [...left, ...right], counter: 0, blockLen: 64, flags: PARENT };
}

/** BLAKE3 of `input`, `outLen` bytes of output (32 is the standard hash). */
export function referenceBlake3(input: Uint8Array, outLen = 32): Buffer {
  const root = node(input, 0);
  const out = Buffer.alloc(Math.ceil(outLen / 64) * 64);
  for (let t = 0; t * 64 < outLen; t++) {
    const w = compress(root.cv, root.block, t, root.blockLen, root.flags | ROOT);
    for (let i = 0; i < 16; i++) out.writeUInt32LE(w[i]!, t * 64 + i * 4);
  }
  return out.subarray(0, outLen);
}
