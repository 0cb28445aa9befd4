// Property test of the native copy-on-write core against a plain Buffer: random writes,
// truncations, reads and commits over a stored file. Every read is compared byte for byte with
// the model, and every commit's chunk list with chunking the whole model anew.
// Replay a run with LAYERFS_COW_SEED=<seed printed below>.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunkLengths, type ChunkerParams } from '../../lib/native/index.js';
import { rng } from '../helpers/edits.js';
import { CowFile } from './cow-support.js';
import { seededBytes } from './helpers.js';

const SEED = Number(process.env.LAYERFS_COW_SEED ?? Date.now() % 0x7fffffff);
const ITERATIONS = Number(process.env.LAYERFS_COW_ITERATIONS ?? 300);
console.log(`cow-model seed ${SEED} (LAYERFS_COW_SEED=${SEED} to replay), ${ITERATIONS} files`);

const SMALL: ChunkerParams = { minSize: 64, avgSize: 256, maxSize: 1024 };

function resize(model: Buffer, size: number): Buffer {
  if (size <= model.length) return Buffer.from(model.subarray(0, size));
  return Buffer.concat([model, Buffer.alloc(size - model.length)]);
}

/** One stored file edited by `steps` random operations; returns the operations run, for messages. */
function runFile(seed: number, steps: number): void {
  const r = rng(seed);
  const pick = (n: number) => Math.floor(r() * n);
  const small = r() < 0.8;
  const params = small ? SMALL : undefined;
  const scale = small ? 20_000 : 400_000;
  let model = seededBytes(seed, pick(scale));
  const f = new CowFile(Buffer.from(model), params);
  const log: string[] = [];
  const where = () => `seed ${seed}: ${log.slice(-6).join('; ')}`;
  for (let step = 0; step < steps; step++) {
    const op = pick(100);
    if (op < 45) {
      // Writes: unaligned, page-aligned whole pages, past the end, tiny and large.
      const aligned = r() < 0.2;
      let pos = pick(model.length + 9000);
      let len = 1 + pick(r() < 0.3 ? 20 : r() < 0.8 ? 9000 : 40_000);
      if (aligned) {
        pos -= pos % 4096;
        len = 4096 * (1 + pick(3));
      }
      const data = seededBytes(seed + step * 7919, len);
      log.push(`write ${pos}+${len}`);
      f.write(data, pos);
      if (pos + len > model.length) model = resize(model, pos + len);
      data.copy(model, pos);
    } else if (op < 60) {
      const choice = pick(4);
      const size = choice === 0 ? 0 : choice === 1 ? model.length + pick(10_000) : choice === 2 ? pick(model.length + 1) : model.length - (model.length % 4096);
      log.push(`truncate ${size}`);
      f.truncate(size);
      model = resize(model, size);
    } else if (op < 90) {
      const pos = pick(model.length + 100);
      const len = pick(30_000);
      log.push(`read ${pos}+${len}`);
      const got = f.read(pos, len);
      const want = model.subarray(Math.min(pos, model.length), Math.min(pos + len, model.length));
      assert.ok(got.equals(want), `read ${pos}+${len} differs from the model (${where()})`);
    } else {
      log.push('commit');
      const piece = r() < 0.5 ? undefined : 1 + pick(70_000);
      const c = f.commit(piece);
      assert.deepEqual(f.chunks, chunkLengths(model, params), `commit: chunk list equals a whole chunking (${where()})`);
      for (const rep of c.replaced) assert.ok(rep.from <= rep.to, where());
    }
    assert.equal(f.pages.size, model.length, `size (${where()})`);
  }
  assert.ok(f.read(0, model.length).equals(model), `final content (${where()})`);
  f.commit();
  assert.deepEqual(f.chunks, chunkLengths(model, params), `final commit (${where()})`);
  assert.ok(f.base.equals(model), `stored content (${where()})`);
}

test(`random writes, truncations, reads and commits match a plain Buffer (seed ${SEED})`, () => {
  for (let i = 0; i < ITERATIONS; i++) runFile((SEED + i * 104729) >>> 0 || 1, 60);
});

test('fixed seeds: small edits of a large stored file re-chunk only their neighbourhood', () => {
  const base = seededBytes(77, 2_000_000);
  const f = new CowFile(Buffer.from(base));
  const model = Buffer.from(base);
  const r = rng(77);
  for (let round = 0; round < 10; round++) {
    for (let k = 0; k < 3; k++) {
      const pos = Math.floor(r() * (model.length - 5000));
      const data = seededBytes(round * 10 + k, 1 + Math.floor(r() * 4096));
      f.write(data, pos);
      data.copy(model, pos);
    }
    const c = f.commit();
    assert.deepEqual(f.chunks, chunkLengths(model));
    // Three changes of at most 2 pages each: a few chunks and pieces each, never the file.
    assert.ok(c.chunks <= 3 * 8, `round ${round}: ${c.chunks} chunks re-hashed`);
    assert.ok(c.bytesRead <= 3 * 192 * 1024, `round ${round}: ${c.bytesRead} bytes read`);
  }
});
