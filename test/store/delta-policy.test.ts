/**
 * Which versions the writer stores as deltas: a version whose base ends a full chain is a
 * delta against an older version on that chain (REBASE_DEPTH), not a full copy; tree objects
 * keep deltas up to KEEP_TREE_DELTA of their size, content only up to KEEP_DELTA. Reads and
 * verify re-hash through every such form; a damaged link fails the tip with ERR_CORRUPT.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Codec, ObjectKind, Store } from '../../lib/store/index.js';
import { DELTA_MAX_DEPTH, KEEP_DELTA, KEEP_TREE_DELTA, REBASE_DEPTH } from '../../lib/store/codec.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { assertCorruptRead, damageStored, depthOf, hintedChain } from '../helpers/deltas.js';

/** 60 versions of one blob, each a small edit of the one before, each hinted with its predecessor. */
function editChain(store: Store, versions = 60): [Buffer, Buffer][] {
  return hintedChain(store, Buffer.from(seededBytes(21, 6000).map((b) => 97 + (b % 16))), versions, (prev, v) => {
    const at = (v * 389) % (prev.length - 16);
    return Buffer.concat([prev.subarray(0, at), Buffer.from(`v${v}:`), prev.subarray(at + 2)]);
  });
}

test('a version whose base ends a full chain is a delta against an older version, not a full copy', () => {
  const path = join(tempDir(), 's.sqlite');
  const store = Store.create(path);
  try {
    const versions = editChain(store);
    const depths = versions.map(([id]) => depthOf(store, id));
    assert.equal(depths[0], 0);
    // Every later version is a delta; chains stay within the bound and restart at REBASE_DEPTH.
    assert.deepEqual(
      depths.slice(1).filter((d) => d === 0),
      [],
      `depths ${depths.join(',')}`,
    );
    assert.ok(Math.max(...depths) <= DELTA_MAX_DEPTH, `depths ${depths.join(',')}`);
    assert.ok(depths.includes(REBASE_DEPTH) && depths.indexOf(DELTA_MAX_DEPTH) < depths.lastIndexOf(REBASE_DEPTH), `rebased: ${depths.join(',')}`);
    for (const [id, data] of versions) assert.ok(store.objects.get(id, ObjectKind.Blob).equals(data));
    // Text against an unrelated text: a level-19 frame of its own, not a delta worth a chain.
    const words = (seed: number) => Array.from({ length: 600 }, (_, i) => ['alpha', 'beta', 'gamma', 'delta', 'omega', 'sigma'][(i * seed + (i >> 3)) % 6]).join(' ');
    const text = store.writeSync((w) => {
      const base = w.add(ObjectKind.Blob, Buffer.from(`${words(5)}\n${seededBytes(7, 64).toString('hex')}`));
      const id = w.add(ObjectKind.Blob, Buffer.from(`${seededBytes(8, 2000).toString('base64')}`));
      w.suggestBase(id, base);
      return id;
    });
    assert.notEqual(store.objects.locator(text)!.codec, Codec.Delta);
  } finally {
    store.close();
  }
});

test('a damaged link below a rebased delta fails the tip with ERR_CORRUPT', () => {
  const path = join(tempDir(), 's.sqlite');
  const store = Store.create(path);
  let tip: Buffer;
  let link: Buffer;
  try {
    const versions = editChain(store, 40);
    tip = versions[versions.length - 1]![0];
    // The object the tip's chain reaches at depth 1 (a delta every later version decodes through).
    let cur = tip;
    while (depthOf(store, cur) > 1) cur = store.objects.locator(cur)!.base!;
    link = cur;
  } finally {
    store.close();
  }
  damageStored(path, link, Codec.Delta, 0x21);
  assertCorruptRead(path, tip);
});

test('a tree object keeps a delta up to KEEP_TREE_DELTA of its size; content up to KEEP_DELTA, or KEEP_DELTA_OF_WHOLE of it compressed whole', () => {
  assert.ok(KEEP_TREE_DELTA > KEEP_DELTA);
  const store = Store.create(join(tempDir(), 's.sqlite'));
  try {
    // 24 "child ids" (random, as in an upper page), 9 of them replaced: a delta of ~35-45 %.
    const old = seededBytes(31, 24 * 33);
    const next = Buffer.from(old);
    for (let k = 0; k < 9; k++) seededBytes(40 + k, 32).forEach((b, i) => (next[k * 2 * 33 + i] = b));
    const ids = store.writeSync((w) => {
      const out: Record<string, Buffer> = {};
      for (const kind of [ObjectKind.Page, ObjectKind.Blob]) {
        // Distinct ids per kind: the same bytes under two domains.
        const base = w.add(kind, old);
        const id = w.add(kind, next);
        w.suggestBase(id, base);
        out[kind] = id;
      }
      return out;
    });
    const page = store.objects.locator(ids[ObjectKind.Page]!)!;
    const blob = store.objects.locator(ids[ObjectKind.Blob]!)!;
    assert.equal(page.codec, Codec.Delta);
    assert.ok(page.length > next.length * KEEP_DELTA && page.length <= next.length * KEEP_TREE_DELTA, `page delta ${page.length} of ${next.length}`);
    // Random bytes compress to their size whole, so their delta of ~40 % pays.
    assert.equal(blob.codec, Codec.Delta);
    assert.ok(store.objects.get(ids[ObjectKind.Page]!, ObjectKind.Page).equals(next));
    assert.ok(store.objects.get(ids[ObjectKind.Blob]!, ObjectKind.Blob).equals(next));
    // Text against an unrelated text: a level-19 frame of its own, not a delta worth a chain.
    const words = (seed: number) => Array.from({ length: 600 }, (_, i) => ['alpha', 'beta', 'gamma', 'delta', 'omega', 'sigma'][(i * seed + (i >> 3)) % 6]).join(' ');
    const text = store.writeSync((w) => {
      const base = w.add(ObjectKind.Blob, Buffer.from(`${words(5)}\n${seededBytes(7, 64).toString('hex')}`));
      const id = w.add(ObjectKind.Blob, Buffer.from(`${seededBytes(8, 2000).toString('base64')}`));
      w.suggestBase(id, base);
      return id;
    });
    assert.notEqual(store.objects.locator(text)!.codec, Codec.Delta);
  } finally {
    store.close();
  }
});

test('a proposed delta (compressed on the addon threads, judged at seal) is stored exactly as a suggested one', () => {
  const words = (seed: number) => Array.from({ length: 600 }, (_, i) => ['alpha', 'beta', 'gamma', 'delta', 'omega', 'sigma'][(i * seed + (i >> 3)) % 6]).join(' ');
  const first = Buffer.from(seededBytes(23, 6000).map((b) => 97 + (b % 16)));
  // 40 versions, each a small edit of the one before, in one transaction: the chains of open
  // objects count their proposals as deltas, so the depths bound the same way.
  const versions = [first];
  for (let v = 1; v < 40; v++) {
    const prev = versions[v - 1]!;
    const at = (v * 389) % (prev.length - 16);
    versions.push(Buffer.concat([prev.subarray(0, at), Buffer.from(`v${v}:`), prev.subarray(at + 2)]));
  }
  const unrelated = [Buffer.from(`${words(5)}\n${seededBytes(7, 64).toString('hex')}`), Buffer.from(seededBytes(8, 2000).toString('base64'))];
  const layouts = (['suggestBase', 'proposeBase'] as const).map((how) => {
    const store = Store.create(join(tempDir(), 's.sqlite'));
    try {
      const ids = store.writeSync((w) => {
        const out = [w.add(ObjectKind.Blob, versions[0]!)];
        for (let v = 1; v < versions.length; v++) {
          out.push(w.add(ObjectKind.Blob, versions[v]!));
          w[how](out[v]!, out[v - 1]!);
        }
        const base = w.add(ObjectKind.Blob, unrelated[0]!);
        out.push(w.add(ObjectKind.Blob, unrelated[1]!));
        w[how](out[out.length - 1]!, base);
        return out;
      });
      for (let v = 0; v < versions.length; v++) assert.ok(store.objects.get(ids[v]!, ObjectKind.Blob).equals(versions[v]!));
      assert.notEqual(store.objects.locator(ids[ids.length - 1]!)!.codec, Codec.Delta);
      return ids.map((id) => {
        const l = store.objects.locator(id)!;
        return `${l.codec}:${l.length}:${l.base?.toString('hex') ?? '-'}:${depthOf(store, id)}`;
      });
    } finally {
      store.close();
    }
  });
  assert.ok(layouts[0]!.filter((l) => l.startsWith(`${Codec.Delta}:`)).length >= 30, layouts[0]!.join(' '));
  assert.deepEqual(layouts[1], layouts[0]);
});
