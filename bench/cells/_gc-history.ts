// The history of the store_gc family, shared by its layerfs and git cells; not a cell itself.
// A base tree (two 2 MiB text-like "large" files, 100 small text files) and BRANCHES Branches of
// COMMITS Commits each. Commit k of Branch b: a new 1 MiB random file every 4th Commit, a 64-byte
// overwrite in one large file (so its other chunks stay shared across Branches), and a line
// appended to two small text files (stored as deltas). Every byte and mtime follows from (b, k),
// so replaying a Branch anywhere gives the same trees (and in layerfs the same root ids).

import fs from 'node:fs';
import path from 'node:path';
import { Rng } from '../lib/prng.js';

const LARGE = 2 * 1024 * 1024;
const RANDOM = 1024 * 1024;
const TEXTS = 100;
const WORDS = 'layer store commit branch value delta page chunk tree index object garbage retention pin'.split(' ');
const EPOCH = 1_700_000_000;

function random(seed: number, n: number): Buffer {
  const words = new Uint32Array(Math.ceil(n / 4));
  new Rng(seed, 7).fillWords(words);
  return Buffer.from(words.buffer, 0, n);
}

function text(seed: number, n: number): Buffer {
  const r = new Rng(seed, 11);
  let s = '';
  while (s.length < n) s += WORDS[r.below(WORDS.length)] + (r.below(10) === 0 ? '\n' : ' ');
  return Buffer.from(s.slice(0, n));
}

const setTime = (p: string, t: number) => fs.utimesSync(p, t, t);

function fixDirs(root: string, t: number): void {
  for (const d of ['rand', 'large', 'text']) if (fs.existsSync(path.join(root, d))) setTime(path.join(root, d), t);
  setTime(root, t);
}

/** Writes the base tree into `root` (created). */
export function writeBase(root: string): void {
  for (const d of ['rand', 'large', 'text']) fs.mkdirSync(path.join(root, d), { recursive: true });
  for (let i = 0; i < 2; i++) {
    const p = path.join(root, 'large', `L${i}.txt`);
    fs.writeFileSync(p, text(900 + i, LARGE));
    setTime(p, EPOCH);
  }
  for (let i = 0; i < TEXTS; i++) {
    const p = path.join(root, 'text', `t${String(i).padStart(3, '0')}.txt`);
    fs.writeFileSync(p, text(i + 1, 2000 + ((i * 37) % 4000)));
    setTime(p, EPOCH);
  }
  fixDirs(root, EPOCH);
}

/** Applies Commit k of Branch b to the tree at `root`. */
export function applyCommit(root: string, b: number, k: number): void {
  const t = EPOCH + 1 + b * 1000 + k;
  if (k % 4 === 0) {
    // git tracks no empty directory: after a checkout `rand` may be gone.
    fs.mkdirSync(path.join(root, 'rand'), { recursive: true });
    const p = path.join(root, 'rand', `r${b}-${k}.bin`);
    fs.writeFileSync(p, random(b * 1000 + k + 1, RANDOM));
    setTime(p, t);
  }
  const large = path.join(root, 'large', `L${k % 2}.txt`);
  const fd = fs.openSync(large, 'r+');
  try {
    const r = new Rng(b * 1000 + k + 1, 13);
    fs.writeSync(fd, text(b * 7919 + k, 64), 0, 64, r.below(LARGE - 64));
  } finally {
    fs.closeSync(fd);
  }
  setTime(large, t);
  for (const i of [(b * 7 + k * 3) % TEXTS, (b * 11 + k * 5 + 1) % TEXTS]) {
    const p = path.join(root, 'text', `t${String(i).padStart(3, '0')}.txt`);
    fs.appendFileSync(p, `branch ${b} commit ${k}: ${text(b * 31 + k, 40).toString()}\n`);
    setTime(p, t);
  }
  fixDirs(root, t);
}
