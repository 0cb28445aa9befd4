// A materialized commit's memory does not grow with the change: thousands of edited small files
// (stored as deltas against their previous versions) and a large file edited in the middle,
// committed in a child process whose peak resident set (VmHWM) is read back.
// LAYERFS_TEST_SEED picks the content (default 1); the seed is printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { Rng } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const SMALL_FILES = 3000;
const LARGE_BYTES = 96 * 1024 * 1024;
/**
 * The bound asserted: the goal, 256 MiB (the commit measures 191–211 MiB here: chunk streams free
 * their blocks at close, changed records stay encoded, pack rows and delta prefixes are joined in
 * reused buffers; 274–283 MiB before). About 110 MiB of it is the child's own start under tsx.
 */
const PEAK_MIB = 256;

/** Text-like content: lines of words, so deltas and compression behave as on source files. */
function text(rng: Rng, bytes: number): Buffer {
  const words = ['const', 'return', 'function', 'value', 'export', 'import', 'layer', 'branch', 'commit', 'store', '=>', '{', '}', ';'];
  const parts: string[] = [];
  let n = 0;
  while (n < bytes) {
    const w = words[rng.below(words.length)]! + (rng.below(8) === 0 ? '\n' : ' ');
    parts.push(w);
    n += w.length;
  }
  return Buffer.from(parts.join('')).subarray(0, bytes);
}

function writeLarge(path: string, seed: number, edit: boolean): void {
  const rng = new Rng(seed, 0x1a7e);
  const fd = openSync(path, 'w');
  const piece = 4 * 1024 * 1024;
  for (let off = 0; off < LARGE_BYTES; off += piece) {
    const b = text(rng, piece);
    if (edit && off === LARGE_BYTES / 2) b.write('an edit in the middle of the large file', 100);
    writeSync(fd, b);
  }
  closeSync(fd);
}

test(`a commit of ${SMALL_FILES} edited files and an edited ${LARGE_BYTES >> 20} MiB file peaks under ${PEAK_MIB} MiB (child process, VmHWM)`, { timeout: 900_000 }, async () => {
  const seed = Number(process.env.LAYERFS_TEST_SEED ?? 1);
  console.log(`seed ${seed}`);
  const dir = tempDir('commit-rss');
  const src = join(dir, 'src');
  mkdirSync(src);
  const rng = new Rng(seed, 0x5eed);
  const small: Buffer[] = [];
  for (let i = 0; i < SMALL_FILES; i++) {
    const d = join(src, `pkg${i % 50}`);
    mkdirSync(d, { recursive: true });
    small.push(text(rng, 2048 + rng.below(30_000)));
    writeFileSync(join(d, `f${i}.js`), small[i]!);
  }
  writeLarge(join(src, 'large.bin'), seed, false);
  const store = join(dir, 'store.sqlite');
  const c = Client.create(store);
  const init = await c.initLayerStack({ name: 'rss', source: src });
  c.forkBranch({ name: 'next', layer: init.layer.id });
  const wsDir = join(dir, 'ws');
  await c.createWorkspace('next', { at: wsDir, projection: 'materialize' });
  c.close();
  // A new release: every small file edited in one place, the large file in its middle.
  for (let i = 0; i < SMALL_FILES; i++) {
    const b = Buffer.from(small[i]!);
    b.write(`/* release ${i} */`, rng.below(b.length - 32));
    writeFileSync(join(wsDir, `pkg${i % 50}`, `f${i}.js`), b);
  }
  writeLarge(join(wsDir, 'large.bin'), seed, true);

  const child = fileURLToPath(new URL('./commit-rss-child.ts', import.meta.url));
  const out = JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', child, store], { encoding: 'utf8' })) as { outcome: string; objectsInserted: number; peakMiB: number; riseMiB: number; ms: number };
  console.log(`commit: ${JSON.stringify(out)}`);
  assert.equal(out.outcome, 'Created');
  assert.ok(out.objectsInserted >= SMALL_FILES, `objects inserted: ${out.objectsInserted}`);
  assert.ok(out.peakMiB <= PEAK_MIB, `the commit peaked at ${out.peakMiB.toFixed(1)} MiB (rise ${out.riseMiB.toFixed(1)} MiB), over ${PEAK_MIB} MiB`);
  const after = Client.connect(store);
  try {
    assertIntact(after);
    assert.equal(Buffer.concat([...after.readFile('next', 'pkg7/f7.js')]).length, small[7]!.length);
  } finally {
    after.close();
  }
});
