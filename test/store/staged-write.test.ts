/**
 * Writes staged before the write lock (Store.writeStaged, ObjectWriter.applyStaged): written
 * under the lock exactly as a direct write would be, or, when another handle changed what the
 * staged rows rely on meanwhile, not at all.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { LayerFsError } from '../../lib/errors.js';
import { idOf, ObjectKind, Store } from '../../lib/store/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { assertStoreIntact } from '../helpers/integrity.js';

const SEED = 7;

/** Text-like bytes, so a delta against a neighbour pays. */
function text(seed: number, n: number): Buffer {
  const rnd = seededBytes(seed, n);
  let s = '';
  for (let i = 0; s.length < n; i++) s += ['import', 'layer', 'commit', 'branch', '{', '}', ';', '\n'][rnd[i % n]! % 8]! + ' ';
  return Buffer.from(s).subarray(0, n);
}

const missing = (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT' && /missing/.test(e.message);

/** Two handles on one new Store: the staging one, and another process's stand-in. */
function twoHandles(): { path: string; a: Store; b: Store } {
  const path = join(tempDir(), 's.layerfs');
  Store.create(path).close();
  return { path, a: Store.open(path), b: Store.open(path) };
}

const put = (w: { put(kind: ObjectKind, id: Buffer, data: Uint8Array): boolean }, data: Buffer): Buffer => {
  const id = idOf(ObjectKind.Blob, data);
  w.put(ObjectKind.Blob, id, data);
  return id;
};

test(`a staged write lands whole under the lock: new, reused and delta objects read back (seed ${SEED})`, async () => {
  const { path, a, b } = twoHandles();
  try {
    const old = text(SEED, 20_000);
    const kept = text(SEED + 1, 3000);
    const [oldId, keptId] = await a.write((w) => [put(w, old), put(w, kept)]);
    const next = Buffer.concat([old.subarray(0, 9000), Buffer.from('an edit'), old.subarray(9007)]);
    const fresh = text(SEED + 2, 5000);
    let delta = false;
    const out = await a.writeStaged(
      async (w) => {
        const nextId = put(w, next);
        delta = w.suggestBase(nextId, oldId);
        put(w, kept);
        // Another handle writes meanwhile: the staging handle holds no lock.
        await b.write((w2) => put(w2, fresh));
        return nextId;
      },
      (w, nextId) => nextId.toString('hex') + (w.stats.objectsReused > 0 ? ' reused' : ''),
    );
    assert.ok(delta, 'the edited object is stored as a delta against its stored base');
    assert.ok(out);
    assert.equal(out.value, idOf(ObjectKind.Blob, next).toString('hex') + ' reused');
    const r = Store.open(path);
    try {
      assert.ok(r.objects.get(idOf(ObjectKind.Blob, next)).equals(next));
      assert.ok(r.objects.get(keptId).equals(kept));
      assert.ok(r.objects.get(idOf(ObjectKind.Blob, fresh)).equals(fresh));
    } finally {
      r.close();
    }
    // The handle writes again at once.
    await a.write((w) => put(w, text(SEED + 3, 100)));
  } finally {
    a.close();
    b.close();
  }
  assertStoreIntact(path);
});

test('a staged write goes stale, writing nothing, when another handle stores one of its objects meanwhile', async () => {
  const { path, a, b } = twoHandles();
  try {
    const same = text(SEED + 10, 4000);
    const only = text(SEED + 11, 4000);
    const out = await a.writeStaged(
      async (w) => {
        put(w, same);
        put(w, only);
        await b.write((w2) => put(w2, same));
      },
      () => 'published',
    );
    assert.equal(out, undefined);
    assert.ok(a.objects.get(idOf(ObjectKind.Blob, same)).equals(same));
    assert.throws(() => a.objects.get(idOf(ObjectKind.Blob, only)), missing);
    // Written again directly, it lands.
    await a.write((w) => put(w, only));
    assert.ok(a.objects.get(idOf(ObjectKind.Blob, only)).equals(only));
  } finally {
    a.close();
    b.close();
  }
  assertStoreIntact(path);
});

test('a staged write goes stale when gc deletes an object it reused, or a delta base, meanwhile', async () => {
  const { path, a, b } = twoHandles();
  try {
    const reused = text(SEED + 20, 3000);
    const base = text(SEED + 21, 20_000);
    for (const reuse of [true, false]) {
      await a.write((w) => (reuse ? put(w, reused) : put(w, base)));
      const next = Buffer.concat([base.subarray(0, 5000), Buffer.from('edit'), base.subarray(5004)]);
      const out = await a.writeStaged(
        async (w) => {
          if (reuse) put(w, reused);
          else assert.ok(w.suggestBase(put(w, next), idOf(ObjectKind.Blob, base)), 'a delta against the stored base');
          put(w, text(SEED + 22, 1000));
          // No kept states: gc deletes every object.
          const g = await b.gc({ roots: () => [] });
          assert.ok(g.deletedObjects >= 1);
        },
        () => 'published',
      );
      assert.equal(out, undefined, reuse ? 'reused object deleted' : 'delta base deleted');
      assert.throws(() => a.objects.get(idOf(ObjectKind.Blob, text(SEED + 22, 1000))), missing);
      if (!reuse) assert.throws(() => a.objects.get(idOf(ObjectKind.Blob, next)), missing);
    }
  } finally {
    a.close();
    b.close();
  }
  assertStoreIntact(path);
});

test('a stage that fails leaves nothing written and the handle free; a second write while staging is refused', async () => {
  const { path, a, b } = twoHandles();
  try {
    const data = text(SEED + 30, 2000);
    let refused: unknown;
    await assert.rejects(
      a.writeStaged(
        async (w) => {
          put(w, data);
          refused = await a.write(() => 1).catch((e: unknown) => e);
          throw new Error('the stage failed');
        },
        () => 'published',
      ),
      /the stage failed/,
    );
    assert.ok(refused instanceof LayerFsError && refused.code === 'ERR_BUSY');
    assert.throws(() => a.objects.get(idOf(ObjectKind.Blob, data)), missing);
    assert.throws(() => b.objects.get(idOf(ObjectKind.Blob, data)), missing);
    // A publish that fails rolls back the staged rows too.
    await assert.rejects(
      a.writeStaged(
        async (w) => put(w, data),
        () => {
          throw new Error('the publish failed');
        },
      ),
      /the publish failed/,
    );
    assert.throws(() => b.objects.get(idOf(ObjectKind.Blob, data)), missing);
    assert.equal(await a.write(() => 2), 2);
  } finally {
    a.close();
    b.close();
  }
  assertStoreIntact(path);
});
