// A commit's packed table of what it stored per file answers exactly as a Map of the same entries
// would: seeded runs of sets (new serials, overwrites, empty files) against a Map as the model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ContentForm } from '../../lib/store/index.js';
import type { StoredContent } from '../../lib/fuse/content.js';
import { StoredContents } from '../../lib/fuse/stored-contents.js';
import { Rng } from '../helpers/random.js';

function randomContent(r: Rng): StoredContent {
  if (r.below(8) === 0) return { form: ContentForm.None, id: null, size: 0 };
  const id = Buffer.alloc(32);
  for (let i = 0; i < 32; i++) id[i] = r.below(256);
  return { form: r.below(2) === 0 ? ContentForm.Whole : ContentForm.Extents, id, size: r.below(2 ** 40) };
}

test('StoredContents answers as a Map of the same entries (seeded)', () => {
  for (let seed = 1; seed <= 40; seed++) {
    const r = new Rng(seed);
    const table = new StoredContents();
    const model = new Map<number, StoredContent>();
    // Enough entries to cross several id blocks (2,048 ids each), with overwrites.
    const n = 1 + r.below(9000);
    for (let i = 0; i < n; i++) {
      const serial = r.below(n * 2) + 1;
      const c = randomContent(r);
      table.set(serial, c);
      model.set(serial, { ...c, id: c.id && Buffer.from(c.id) });
      // The caller's id may be reused after set: the table keeps its own copy.
      c.id?.fill(0xee);
    }
    assert.equal(table.size, model.size, `seed ${seed}`);
    assert.deepEqual([...table.serials()].sort((a, b) => a - b), [...model.keys()].sort((a, b) => a - b), `seed ${seed}`);
    for (const [serial, c] of model) {
      assert.ok(table.has(serial), `seed ${seed}: serial ${serial}`);
      assert.deepEqual(table.get(serial), c, `seed ${seed}: serial ${serial}`);
    }
    assert.equal(table.get(n * 2 + 5), undefined);
    assert.equal(table.has(n * 2 + 5), false);
  }
});

test('StoredContents hands out ids of their own', () => {
  const table = new StoredContents();
  table.set(7, { form: ContentForm.Whole, id: Buffer.alloc(32, 1), size: 10 });
  const a = table.get(7)!;
  a.id!.fill(2);
  assert.deepEqual(table.get(7)!.id, Buffer.alloc(32, 1));
});

test('StoredContents refuses an id that is not 32 bytes', () => {
  const table = new StoredContents();
  assert.throws(() => table.set(1, { form: ContentForm.Whole, id: Buffer.alloc(31), size: 1 }), RangeError);
  assert.equal(table.size, 0);
});
