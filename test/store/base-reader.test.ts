/**
 * The write side's garbage-free reads and buffers: frames decoded into the caller's buffer, delta
 * bases lent from reused frames (base-reader.ts), group buffers reused (GroupBuffers), and an
 * unflushed delta read back from its frame (DeltaPlanner.decoded).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { zstdCompress, zstdDecompressInto, zstdDictCompress, zstdDictDecompressInto, zstdTrainDictionary } from '../../lib/native/index.js';
import { LayerFsError } from '../../lib/errors.js';
import { Codec, ObjectKind, Store } from '../../lib/store/index.js';
import { BaseReader } from '../../lib/store/base-reader.js';
import { GroupBuffers, Group } from '../../lib/store/object-groups.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { damageStored } from '../helpers/deltas.js';

const SEED = 41;

/** Text-like bytes: a small vocabulary in a seeded order, so frames compress and deltas pay. */
function text(seed: number, n: number): Buffer {
  const words = ['export', 'const', 'return', 'layer', 'store', 'frame', '{', '}', ';', '\n'];
  const rnd = seededBytes(seed, n);
  let s = '';
  for (let i = 0; s.length < n; i++) s += words[rnd[i % n]! % words.length]! + ' ';
  return Buffer.from(s).subarray(0, n);
}

const corrupt = (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT';

test(`zstdDecompressInto decodes into the caller's buffer, or only reports a size that does not fit (seed ${SEED})`, () => {
  const data = text(SEED, 100_000);
  const frame = zstdCompress(data, 3);
  const small = Buffer.alloc(1000, 7);
  assert.equal(zstdDecompressInto(frame, small, -1), data.length);
  assert.ok(small.equals(Buffer.alloc(1000, 7)), 'nothing is decoded into a buffer too small');
  const out = Buffer.alloc(data.length + 10);
  assert.equal(zstdDecompressInto(frame, out, -1), data.length);
  assert.ok(out.subarray(0, data.length).equals(data));
  assert.equal(zstdDecompressInto(frame, out, data.length), data.length);
  // With a prefix: a delta.
  const next = Buffer.concat([data.subarray(0, 50_000), Buffer.from('changed'), data.subarray(50_007)]);
  const delta = zstdCompress(next, 3, data);
  assert.equal(zstdDecompressInto(delta, out, next.length, data), next.length);
  assert.ok(out.subarray(0, next.length).equals(next));
  assert.throws(() => zstdDecompressInto(delta, out, next.length), corrupt);
  assert.throws(() => zstdDecompressInto(frame, out, 10), corrupt);
  const bad = Buffer.from(frame);
  bad[bad.length >> 1]! ^= 0xff;
  assert.throws(() => zstdDecompressInto(bad, out, data.length), corrupt);
});

test(`zstdDictDecompressInto decodes a dictionary frame into the caller's buffer (seed ${SEED})`, (t) => {
  const samples = Array.from({ length: 200 }, (_, i) => text(SEED + i, 2000));
  const dict = zstdTrainDictionary(Buffer.concat(samples), Uint32Array.from(samples.map((s) => s.length)), 16 * 1024);
  if (!dict) return t.skip('no dictionary builder on this system');
  const data = text(SEED + 1000, 30_000);
  const frame = zstdDictCompress(data, 3, dict);
  const out = Buffer.alloc(40_000);
  assert.equal(zstdDictDecompressInto(frame, out, -1, dict), data.length);
  assert.ok(out.subarray(0, data.length).equals(data));
  assert.equal(zstdDictDecompressInto(frame, Buffer.alloc(10), -1, dict), data.length);
});

test(`a BaseReader lends authenticated bytes from reused frames, and a damaged frame fails as a read does (seed ${SEED})`, () => {
  const path = join(tempDir(), 's.sqlite');
  const store = Store.create(path);
  try {
    const blobs = Array.from({ length: 40 }, (_, i) => text(SEED + i, 3000 + i * 100));
    const ids = store.writeSync((w) => blobs.map((b) => w.add(ObjectKind.Blob, b)));
    const grouped = ids.filter((id) => [Codec.Zstd, Codec.Dict].includes(store.objects.locator(id)!.codec));
    assert.ok(grouped.length >= 30, 'most blobs are in compressed groups');
    const bases = new BaseReader(store.db, () => store.objects);
    // Twice over, in two orders: the second pass reads from the frames decoded by the first.
    for (const order of [ids, [...ids].reverse()]) {
      for (const id of order) {
        const i = ids.indexOf(id);
        assert.ok(bases.borrow(id).equals(blobs[i]!), `blob ${i}`);
      }
    }
    // A lent view is the reader's buffer: copied before the next borrow, it stays right.
    const first = Buffer.from(bases.borrow(ids[0]!));
    bases.borrow(ids[1]!);
    assert.ok(first.equals(blobs[0]!));
    const victim = grouped[grouped.length - 1]!;
    const loc = store.objects.locator(victim)!;
    const sameFrame = ids.filter((id) => {
      const l = store.objects.locator(id)!;
      return l.pack === loc.pack && l.offset === loc.offset;
    });
    store.close();
    damageStored(path, victim, loc.codec as Codec, 0x40);
    const again = Store.open(path);
    try {
      // Whatever the damage hits, a borrow answers as a read does: the same bytes, or ERR_CORRUPT.
      const fresh = new BaseReader(again.db, () => again.objects);
      let failed = 0;
      for (const id of sameFrame) {
        const blob = blobs[ids.indexOf(id)]!;
        let read: Buffer | undefined;
        try {
          read = again.objects.get(id);
        } catch (e) {
          assert.ok(corrupt(e));
        }
        if (read) assert.ok(read.equals(blob) && fresh.borrow(id).equals(blob));
        else {
          assert.throws(() => fresh.borrow(id), corrupt);
          failed++;
        }
      }
      assert.ok(failed > 0, 'the damage reaches at least one object of its frame');
    } finally {
      again.close();
    }
  } finally {
    store.close();
  }
});

test('GroupBuffers gives back the smallest buffer that fits, and keeps at most its bound', () => {
  const pool = new GroupBuffers();
  assert.equal(pool.take(100), undefined);
  const a = Buffer.alloc(48 * 1024);
  const b = Buffer.alloc(96 * 1024);
  pool.give(b);
  pool.give(a);
  assert.equal(pool.take(40 * 1024), a);
  assert.equal(pool.take(40 * 1024), b);
  assert.equal(pool.take(40 * 1024), undefined);
  for (let i = 0; i < 200; i++) pool.give(Buffer.alloc(48 * 1024));
  let kept = 0;
  while (pool.take(1)) kept++;
  assert.ok(kept > 0 && kept * 48 * 1024 <= 4 * 1024 * 1024, `${kept} kept`);
  // A group takes its first buffer from the pool, and a released group holds none.
  const spare = Buffer.alloc(64 * 1024);
  pool.give(spare);
  const g = new Group(true, 32 * 1024, pool);
  g.append(Buffer.from('hello'));
  assert.equal(g.buf, spare);
  pool.release(g);
  assert.equal(g.buf.length, 0);
});

test(`an unflushed object stored as a delta reads back from its frame (seed ${SEED})`, () => {
  const store = Store.create(join(tempDir(), 's.sqlite'));
  try {
    const old = text(SEED, 20_000);
    const oldId = store.writeSync((w) => w.add(ObjectKind.Blob, old));
    const next = Buffer.concat([old.subarray(0, 9000), Buffer.from('an edit in the middle'), old.subarray(9021)]);
    store.writeSync((w) => {
      const id = w.add(ObjectKind.Blob, next);
      assert.ok(w.suggestBase(id, oldId), 'the edit is stored as a delta');
      assert.ok(w.read(id).equals(next));
      assert.ok(w.unflushed(id)!.equals(next));
    });
    const id = store.writeSync((w) => w.add(ObjectKind.Blob, next));
    assert.equal(store.objects.locator(id)!.codec, Codec.Delta);
    assert.ok(store.objects.get(id, ObjectKind.Blob).equals(next));
  } finally {
    store.close();
  }
});

test(`a BaseReader lends a base remembered ahead of the write lock as it was kept, without its frame (seed ${SEED})`, () => {
  const store = Store.create(join(tempDir(), 's.sqlite'));
  try {
    const blobs = Array.from({ length: 20 }, (_, i) => text(SEED + 500 + i, 4000));
    const ids = store.writeSync((w) => blobs.map((b) => w.add(ObjectKind.Blob, b)));
    const id = ids[7]!;
    // What a small commit's readBasesAhead keeps: the bytes get() returned, remembered by id.
    const kept = store.objects.get(id, ObjectKind.Blob);
    store.objects.remember(id, ObjectKind.Blob, kept);
    const bases = new BaseReader(store.db, () => store.objects);
    assert.equal(bases.borrow(id), kept, 'the remembered Buffer itself');
    assert.ok(bases.borrow(ids[8]!).equals(blobs[8]!), 'a base not remembered is read from its frame');
    store.objects.forgetRemembered();
    const read = bases.borrow(id);
    assert.notEqual(read, kept);
    assert.ok(read.equals(blobs[7]!));
  } finally {
    store.close();
  }
});
