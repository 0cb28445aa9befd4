import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { Client } from '../../lib/sdk/index.js';
import { ObjectKind, readRange, Store } from '../../lib/store/index.js';
import { Rng } from '../helpers/random.js';

/** Deterministic offsets in [0, n). */
function offsets(seed: number, count: number, n: number): number[] {
  const r = new Rng(seed);
  return Array.from({ length: count }, () => r.below(n));
}

test('readFile with { offset, length } equals the slice of the whole file, at random offsets, boundaries and past EOF', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  // 3 MiB: ~200 chunks in several level-0 extent nodes under a level-1 root.
  const big = seededBytes(11, 3 * 1024 * 1024 + 123);
  const small = seededBytes(12, 5_000);
  writeFileSync(join(src, 'big'), big);
  writeFileSync(join(src, 'small'), small);
  writeFileSync(join(src, 'empty'), '');
  const text = Buffer.from(Array.from({ length: 200_000 }, (_, i) => `${i}\n`).join(''));
  writeFileSync(join(src, 'text'), text);
  const storePath = join(dir, 's.sqlite');
  const c = Client.create(storePath);
  await c.initLayerStack({ name: 'p', source: src });
  for (const [name, whole] of [['big', big], ['small', small], ['empty', Buffer.alloc(0)]] as const) {
    const n = whole.length;
    const cases: [number, number | undefined][] = [
      [0, undefined],
      [0, 0],
      [0, 1],
      [0, n],
      [0, n + 10],
      [Math.max(0, n - 1), 1],
      [Math.max(0, n - 1), 4096],
      [n, 10],
      [n + 1, 10],
      [n + 1_000_000, undefined],
      [1024 * 1024 - 1, 2],
      [1024 * 1024, 4096],
    ];
    for (const o of offsets(name.length * 7919, 40, Math.max(1, n))) cases.push([o, 4096], [o, 70_000], [o, undefined]);
    for (const [offset, length] of cases) {
      const expect = whole.subarray(Math.min(offset, n), length === undefined ? n : Math.min(n, offset + length));
      const got = c.cat('p', name, { offset, length });
      assert.ok(got.equals(expect), `${name} offset ${offset} length ${length}: ${got.length} bytes, expected ${expect.length}`);
      for (const piece of c.readFile('p', name, { offset, length })) assert.ok(piece.length > 0, 'no empty pieces');
    }
  }
  assert.throws(() => c.cat('p', 'big', { offset: -1 }), { code: 'ERR_INVALID_ARGUMENT' });
  assert.throws(() => c.cat('p', 'big', { length: 1.5 }), { code: 'ERR_INVALID_ARGUMENT' });
  assertIntact(c);
  const rootId = Buffer.from(c.layer('p').rootId, 'hex');
  c.close();

  // Only the chunks that overlap are read: a 4 KiB read loads one or two chunks, not ~200.
  const store = Store.open(storePath, { readonly: true });
  try {
    const inode = store.view(rootId).resolve([Buffer.from('big')], 'big').inode;
    const get = store.objects.get.bind(store.objects);
    const kinds: ObjectKind[] = [];
    store.objects.get = (id: Uint8Array, expected?: ObjectKind) => {
      if (expected !== undefined) kinds.push(expected);
      return get(id, expected);
    };
    const got = Buffer.concat([...readRange(store.objects, inode, { offset: 2_000_000, length: 4096 })]);
    assert.ok(got.equals(big.subarray(2_000_000, 2_004_096)));
    const chunks = kinds.filter((k) => k === ObjectKind.Chunk).length;
    assert.ok(chunks >= 1 && chunks <= 2, `${chunks} chunks read`);
    assert.ok(kinds.filter((k) => k === ObjectKind.Extents).length <= 3, 'one extent node per level');
  } finally {
    store.close();
  }

  const r = cli(['--store', storePath, 'cat', 'p', 'text', '--offset', '1048570', '--length', '20']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, text.subarray(1048570, 1048590).toString());
  const bad = cli(['--store', storePath, 'cat', 'p', 'big', '--offset', '-3']);
  assert.notEqual(bad.code, 0);
});
