import { rng, seededBytes } from '../helpers/random.js';

export { seededBytes };

/** Deterministic integers in [0, n) from a seed, for split points. */
export function seededInts(count: number, n: number, seed: number): number[] {
  const bytes = seededBytes(seed, count * 4);
  return Array.from({ length: count }, (_, i) => bytes.readUInt32LE(i * 4) % n);
}

export const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/** Text-like small files made from `seed`, as zstdTrainDictionary takes them (samples and their sizes). */
export function trainingSamples(seed: number): { data: Buffer; sizes: Uint32Array } {
  const next = rng(seed);
  const words = ['export', 'function', 'return', 'const', 'value', 'layer', 'module', 'await', 'import', 'store'];
  const parts: Buffer[] = [];
  for (let i = 0; i < 2000; i++) {
    const lines: string[] = [];
    for (let l = 0; l < 4 + Math.floor(next() * 20); l++) lines.push(`${words[Math.floor(next() * words.length)]} ${words[Math.floor(next() * words.length)]}_${Math.floor(next() * 500)} = ${Math.floor(next() * 1e6)};`);
    parts.push(Buffer.from(lines.join('\n')));
  }
  return { data: Buffer.concat(parts), sizes: Uint32Array.from(parts.map((p) => p.length)) };
}
