// The write transaction frame that Store.write and Store.writeSync share: one writer per handle,
// COMMIT after the (awaited) body, ROLLBACK of everything on an error, the handle usable after.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { idOf, ObjectKind, Store } from '../../lib/store/index.js';
import { LayerFsError } from '../../lib/errors.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';

const blob = (text: string): { id: Buffer; data: Buffer } => {
  const data = Buffer.from(text);
  return { id: idOf(ObjectKind.Blob, data), data };
};

const isBusy = (e: unknown): boolean => e instanceof LayerFsError && e.code === 'ERR_BUSY';

test('write and writeSync commit what the body wrote and count one transaction each', async () => {
  const path = join(tempDir(), 's.db');
  const store = Store.create(path);
  try {
    const a = blob('async body');
    const b = blob('sync body');
    const before = store.meter.transactions;
    const r1 = await store.write(async (w) => {
      await new Promise((resolve) => setImmediate(resolve));
      return w.put(ObjectKind.Blob, a.id, a.data);
    });
    const r2 = store.writeSync((w) => w.put(ObjectKind.Blob, b.id, b.data));
    assert.equal(r1, true);
    assert.equal(r2, true);
    assert.equal(store.meter.transactions, before + 2);
    assert.ok(store.objects.has(a.id) && store.objects.has(b.id));
    assert.equal(store.db.inTransaction, false);
  } finally {
    store.close();
  }
  assertStoreIntact(path);
});

test('a second write while one is pending is refused with ERR_BUSY, sync or async; the first still commits', async () => {
  const path = join(tempDir(), 's.db');
  const store = Store.create(path);
  try {
    const a = blob('first');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const first = store.write(async (w) => {
      await gate;
      w.put(ObjectKind.Blob, a.id, a.data);
    });
    assert.throws(() => store.writeSync(() => 1), isBusy);
    await assert.rejects(store.write(() => 1), isBusy);
    release();
    await first;
    assert.ok(store.objects.has(a.id));
    assert.equal(store.writeSync(() => 7), 7, 'the handle takes writes again');
  } finally {
    store.close();
  }
  assertStoreIntact(path);
});

test('an error in the body, thrown or rejected, rolls back everything it wrote and leaves the handle usable', async () => {
  const path = join(tempDir(), 's.db');
  const store = Store.create(path);
  try {
    const a = blob('rolled back, async');
    const b = blob('rolled back, sync');
    const before = store.meter.transactions;
    await assert.rejects(
      store.write(async (w) => {
        w.put(ObjectKind.Blob, a.id, a.data);
        w.flush();
        await new Promise((resolve) => setImmediate(resolve));
        throw new Error('async body failed');
      }),
      /async body failed/,
    );
    assert.throws(
      () =>
        store.writeSync((w) => {
          w.put(ObjectKind.Blob, b.id, b.data);
          w.flush();
          throw new Error('sync body failed');
        }),
      /sync body failed/,
    );
    assert.equal(store.meter.transactions, before, 'no transaction committed');
    assert.equal(store.db.inTransaction, false);
    assert.ok(!store.objects.has(a.id) && !store.objects.has(b.id));
    const c = blob('after the errors');
    await store.write((w) => w.put(ObjectKind.Blob, c.id, c.data));
    assert.ok(store.objects.has(c.id));
  } finally {
    store.close();
  }
  assertStoreIntact(path);
});
