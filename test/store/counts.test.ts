/**
 * What the Store tier counts of its own tables (objects) and what lib/history counts of its rows
 * (LayerStacks, Layers), each through its owner, against the tables read directly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyCounts, initLayerStack } from '../../lib/history/index.js';
import { ObjectKind, Store } from '../../lib/store/index.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { seededBytes } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

test('counts, countObjects, hasObjects and historyCounts agree with the tables', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  writeFileSync(join(src, 'a.txt'), 'a small file\n');
  writeFileSync(join(src, 'd', 'big.bin'), seededBytes(3, 512 * 1024));
  const store = Store.create(join(dir, 's.db'));
  try {
    assert.equal(store.hasObjects(), false, 'a new Store holds no object');
    assert.deepEqual(historyCounts(store), { layerStacks: 0, layers: 0 });
    await initLayerStack(store, { name: 'base', source: src });
    await initLayerStack(store, { name: 'empty' });
    assert.equal(store.hasObjects(), true);
    const sql = (q: string, ...a: unknown[]) => store.db.prepare(q).pluck().get(...a) as number;
    assert.equal(store.counts().objects, sql('SELECT count(*) FROM objects'));
    for (const kind of [ObjectKind.Blob, ObjectKind.Chunk, ObjectKind.Page, ObjectKind.Root]) {
      assert.equal(store.countObjects(kind), sql('SELECT count(*) FROM objects WHERE kind = ?', kind), `kind ${kind}`);
    }
    assert.ok(store.countObjects(ObjectKind.Chunk) >= 2, 'the 512 KiB file is chunked');
    assert.deepEqual(historyCounts(store), { layerStacks: 2, layers: 2 });
  } finally {
    store.close();
  }
  assertStoreIntact(join(dir, 's.db'));
});
