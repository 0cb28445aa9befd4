// The edit history of store_edit_history, shared by its layerfs and git cells so both record the
// same bytes: ROUNDS rounds, each editing 1% of the tree's regular files (chosen by a seeded
// PRNG) with one small edit each — an overwrite, an insert or a delete of 8–64 bytes at a random
// offset (text files get words, random files random bytes). Each round's files get one mtime, a
// second later than the round before, so stat-based change detection never misses an edit.

import fs from 'node:fs';
import path from 'node:path';

export const ROUNDS = 100;
export const FRACTION = 0.01;

/** xorshift32: deterministic across runs and tools. */
class Prng {
  private x: number;
  constructor(seed: number) {
    this.x = seed >>> 0 || 1;
  }
  next(): number {
    let x = this.x;
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    this.x = x >>> 0;
    return this.x;
  }
  below(n: number): number {
    return this.next() % n;
  }
}

/** Regular files under `root`, relative, sorted by name bytes. */
export function listFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(p);
    }
  };
  walk('');
  return out.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

const WORDS = ['edit', 'layer', 'store', 'commit', 'value', 'return', 'function', 'delta', 'page', 'index'];

function patch(rng: Prng, text: boolean, n: number): Buffer {
  if (!text) return Buffer.from(Array.from({ length: n }, () => rng.below(256)));
  let s = '';
  while (s.length < n) s += WORDS[rng.below(WORDS.length)] + ' ';
  return Buffer.from(s.slice(0, n));
}

/** Applies round `round` (1-based) to the tree at `root`; returns the edited paths and edit bytes. */
export function applyRound(root: string, files: string[], round: number, seed = 1): { paths: string[]; editBytes: number } {
  const rng = new Prng(seed * 7919 + round * 104729);
  const count = Math.max(1, Math.round(files.length * FRACTION));
  const chosen = new Set<number>();
  while (chosen.size < count) chosen.add(rng.below(files.length));
  const mtime = 1_700_000_000 + round;
  let editBytes = 0;
  const paths: string[] = [];
  for (const i of [...chosen].sort((a, b) => a - b)) {
    const rel = files[i]!;
    const file = path.join(root, rel);
    const data = fs.readFileSync(file);
    const text = data.length === 0 || data.subarray(0, 64).every((b) => b === 10 || (b >= 32 && b < 127));
    const n = 8 + rng.below(57);
    const at = data.length ? rng.below(data.length) : 0;
    const op = rng.below(3);
    let next: Buffer;
    if (op === 0) next = Buffer.concat([data.subarray(0, at), patch(rng, text, n), data.subarray(Math.min(data.length, at + n))]);
    else if (op === 1 || data.length < n) next = Buffer.concat([data.subarray(0, at), patch(rng, text, n), data.subarray(at)]);
    else next = Buffer.concat([data.subarray(0, at), data.subarray(Math.min(data.length, at + n))]);
    fs.writeFileSync(file, next);
    fs.utimesSync(file, mtime, mtime);
    editBytes += n;
    paths.push(rel);
  }
  return { paths, editBytes };
}
