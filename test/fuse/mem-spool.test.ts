// The in-memory spool against a plain Buffer as the model: seeded runs of writes (small appends,
// page-straddling and sparse ones), truncates down and up, and reads, compared byte for byte,
// with the budget it counts back to zero once every spool is closed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryBudget, MemSpool, PAGE } from '../../lib/fuse/spool.js';
import { Rng } from '../helpers/random.js';

const SEED = Number(process.env.LAYERFS_MEM_SPOOL_SEED ?? Date.now() % 0x7fffffff);

function bytes(r: Rng, n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = 1 + r.below(255);
  return b;
}

test(`MemSpool reads back what a plain buffer holds (seed ${SEED}, LAYERFS_MEM_SPOOL_SEED)`, () => {
  const budget = new MemoryBudget(1 << 30);
  for (let run = 0; run < 200; run++) {
    const r = new Rng(SEED, run);
    const spool = new MemSpool(budget);
    let model = Buffer.alloc(0);
    let end = 0;
    const steps = 1 + r.below(60);
    for (let i = 0; i < steps; i++) {
      const where = `seed ${SEED}, run ${run}, step ${i}`;
      const op = r.below(10);
      if (op < 6) {
        // Appends of a few bytes (a tool writing a small file), or anywhere within three pages.
        const pos = op < 3 ? end : r.below(3 * PAGE);
        const data = bytes(r, 1 + r.below(op === 5 ? 2 * PAGE : 300));
        spool.write(data, pos);
        if (pos + data.length > model.length) model = Buffer.concat([model, Buffer.alloc(pos + data.length - model.length)]);
        data.copy(model, pos);
        end = Math.max(end, pos + data.length);
      } else if (op < 8) {
        const size = r.below(3 * PAGE);
        spool.truncate(size);
        if (size < model.length) model = model.subarray(0, size);
        else model = Buffer.concat([model, Buffer.alloc(size - model.length)]);
        end = size;
      } else {
        const pos = r.below(4 * PAGE);
        const len = r.below(2 * PAGE);
        const got = Buffer.alloc(len, 0xee);
        spool.read(got, 0, len, pos);
        const want = Buffer.alloc(len);
        if (pos < model.length) model.copy(want, 0, pos, Math.min(model.length, pos + len));
        assert.deepEqual(got, want, `read ${pos}+${len} (${where})`);
      }
      // What the spool counts against the budget follows its pages through writes and truncates.
      assert.equal(budget.used, spool.bytes, `budget while open (${where})`);
    }
    // Past a truncate the spool may hold bytes beyond the model's end only as zeros.
    const all = Buffer.alloc(model.length + PAGE);
    spool.read(all, 0, all.length, 0);
    assert.deepEqual(all.subarray(0, model.length), model, `whole content (seed ${SEED}, run ${run})`);
    assert.ok(all.subarray(model.length).every((b) => b === 0), `zeros past the end (seed ${SEED}, run ${run})`);
    spool.close();
    assert.equal(budget.used, 0, `budget after close (seed ${SEED}, run ${run})`);
  }
});
