/**
 * Format 2's physical forms: zstd groups, compressed chunk frames and deltas round-trip for
 * every size class; delta chains stay bounded; format-1 Stores open; newer formats are refused;
 * LAYERFS_COMPRESS=0 writes raw; a damaged compressed group fails reads with ERR_CORRUPT.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { zstdCompress, zstdCompressResult, zstdCompressStart, zstdDecompress } from '../../lib/native/index.js';
import { zstdDictCompress, zstdDictDecompress, zstdDictDecompressInto } from '../../lib/native/zstd-dict.js';
import { Client } from '../../lib/sdk/index.js';
import { Codec, FORMAT_VERSION, idOf, ObjectKind, Store } from '../../lib/store/index.js';
import { LayerFsError } from '../../lib/errors.js';
import { DELTA_MAX_DEPTH } from '../../lib/store/codec.js';
import { CHUNK_FRAME_TARGET } from '../../lib/store/schema.js';
import { asFormat } from '../helpers/formats.js';
import { finishFrame, startFrame, type Planned } from '../../lib/store/repack-rows.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { assertCorruptRead, damageStored, depthOf, hintedChain } from '../helpers/deltas.js';

/** Deterministic text-like bytes: words from a small vocabulary, lines of code-ish shape. */
function seededText(seed: number, n: number): Buffer {
  const words = ['const', 'return', 'function', 'value', 'index', 'layer', 'store', '=', '{', '}', '(', ')', 'if', 'else', 'for', 'await'];
  const rnd = seededBytes(seed, n);
  const parts: string[] = [];
  let len = 0;
  for (let i = 0; len < n; i++) {
    const w = (rnd[i % n]! % 7 === 0 ? '\n  ' : ' ') + words[rnd[i % n]! % words.length]!;
    parts.push(w);
    len += w.length;
  }
  return Buffer.from(parts.join('')).subarray(0, n);
}

const SIZES = [0, 1, 255, 256, 257, 1023, 1024, 1025, 4096, 65535, 65536, 65537, 131071];

function codecs(store: Store, ids: Buffer[]): number[] {
  return ids.map((id) => store.objects.locator(id)!.codec);
}

function withEnv<T>(name: string, value: string | undefined, fn: () => T): T {
  const old = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
  try {
    return fn();
  } finally {
    if (old === undefined) delete process.env[name];
    else process.env[name] = old;
  }
}

test('native zstd: round trips with and without a prefix; damaged frames are ERR_CORRUPT', () => {
  for (const n of SIZES) {
    for (const data of [seededBytes(n + 1, n), seededText(n + 2, n)]) {
      const frame = zstdCompress(data, 3);
      assert.ok(zstdDecompress(frame, -1).equals(data));
      assert.ok(zstdDecompress(frame, n).equals(data));
    }
  }
  const base = seededText(7, 20_000);
  const next = Buffer.concat([base.subarray(0, 5000), Buffer.from('an edit'), base.subarray(5000)]);
  const delta = zstdCompress(next, 19, base);
  assert.ok(delta.length < 100, `delta of a small edit is small (${delta.length})`);
  assert.ok(zstdDecompress(delta, next.length, base).equals(next));
  assert.throws(() => zstdDecompress(delta, next.length), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT');
  const frame = zstdCompress(seededText(8, 10_000), 3);
  frame[frame.length >> 1]! ^= 0x55;
  assert.throws(() => zstdDecompress(frame, 10_000), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT');
});

test('frames of sizes up and down from one thread: each decodes to its own input, the same frame in the foreground and on the addon\'s threads (seed 31)', () => {
  // Random bytes compress to about their size (a frame near its bound); text far below it.
  const sizes = [1, 200_000, 3 << 20, (4 << 20) + 4096, 5000, 6 << 20, 300_000, 0, 1 << 20];
  for (const [i, n] of sizes.entries()) {
    const data = i % 2 ? seededBytes(31 + i, n) : seededText(31 + i, n);
    const frame = zstdCompress(data, 1);
    assert.ok(zstdDecompress(frame, data.length).equals(data), `size ${n}, alone`);
    const job = zstdCompressResult(zstdCompressStart(data, 1))!;
    assert.ok(job.equals(frame), `size ${n}, on the addon's threads: the same frame`);
  }
});

test('background compression: jobs return the frames of their inputs, taken in any order, once', () => {
  const inputs = SIZES.map((n, i) => (i % 2 ? seededBytes(300 + i, n) : seededText(300 + i, n)));
  const jobs = inputs.map((d) => zstdCompressStart(d, 3));
  for (let i = jobs.length - 1; i >= 0; i--) assert.ok(zstdDecompress(zstdCompressResult(jobs[i]!)!, inputs[i]!.length).equals(inputs[i]!));
  assert.equal(zstdCompressResult(jobs[0]!), undefined, 'a result is taken once');
});

test('background compression: a caller waiting for a running job compresses those queued behind it; every frame is still its own input\'s', () => {
  // Large slow inputs first, so the threads are busy while the rest queue; taken in seeded orders.
  for (const seed of [11, 12, 13]) {
    const inputs = Array.from({ length: 40 }, (_, i) => (i < 4 ? seededText(seed * 100 + i, 4 << 20) : i % 3 ? seededBytes(seed * 100 + i, 1000 + i * 997) : seededText(seed * 100 + i, 20_000 + i)));
    const jobs = inputs.map((d, i) => zstdCompressStart(d, i < 4 ? 19 : 3, undefined, i % 5 === 4 ? inputs[i - 1] : undefined));
    const order = jobs.map((_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = (seed * 7919 * (i + 1)) % (i + 1);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    // The first job, still running on a thread, first: its caller works through the queue meanwhile.
    for (const i of [0, ...order.filter((k) => k !== 0)]) {
      const prefix = i % 5 === 4 ? inputs[i - 1] : undefined;
      assert.ok(zstdDecompress(zstdCompressResult(jobs[i]!)!, inputs[i]!.length, prefix).equals(inputs[i]!), `seed ${seed}, job ${i}`);
    }
    for (const j of jobs) assert.equal(zstdCompressResult(j), undefined);
  }
});

test('background compression: results held too long are dropped oldest first (by count and by bytes), and a writer that wanted one compresses it again', () => {
  // A slow job queued last and taken: when it returns, every job queued before it has finished
  // (on the threads, or compressed by this caller while it waited), so each drop has happened.
  const settle = () => assert.ok(zstdCompressResult(zstdCompressStart(seededText(999, 1 << 20), 19)));
  // By count: more than 8,192 results nobody takes.
  const first = zstdCompressStart(seededText(900, 3000), 3);
  const many = Array.from({ length: 8300 }, (_, i) => zstdCompressStart(Buffer.from(`job ${i}`), 1));
  settle();
  assert.equal(zstdCompressResult(first), undefined, 'the oldest was dropped');
  assert.ok(zstdCompressResult(many[many.length - 1]!), 'the newest is held');
  for (const j of many) zstdCompressResult(j);
  // By bytes: 24 frames of 1 MiB of random bytes (stored about whole) pass the 16 MiB held.
  const random = Array.from({ length: 24 }, (_, i) => seededBytes(910 + i, 1 << 20));
  const big = random.map((d) => zstdCompressStart(d, 1));
  settle();
  assert.equal(zstdCompressResult(big[0]!), undefined, 'over 16 MiB of frames held: the oldest was dropped');
  const last = zstdCompressResult(big[big.length - 1]!);
  assert.ok(last && zstdDecompress(last, 1 << 20).equals(random[random.length - 1]!));
  for (const j of big) zstdCompressResult(j);
  // A repack's group whose result was dropped meanwhile: the frame it writes is the same bytes.
  const items = Array.from({ length: 6 }, (_, i) => ({ p: { id: Buffer.alloc(32, i) } as Planned, data: seededText(920 + i, 5000) }));
  const g = { items, bytes: items.reduce((n, it) => n + it.data.length, 0) };
  const expected = finishFrame(startFrame(g, 3));
  const job = startFrame(g, 3);
  const flood = Array.from({ length: 8300 }, (_, i) => zstdCompressStart(Buffer.from(`flood ${i}`), 1));
  settle();
  assert.equal(zstdCompressResult(flood[0]!) !== undefined, false, 'the flood\'s oldest were dropped too');
  const again = finishFrame(job);
  assert.ok(again.bytes.equals(expected.bytes), 'compressed again, the same frame');
  assert.deepEqual(again.entries.map((e) => e.slice(1)), expected.entries.map((e) => e.slice(1)));
  for (const j of flood) zstdCompressResult(j);
});

test('dictionaries given with their id: the digested one is reused by id, another id or other bytes digest anew; frames are those of the bytes alone', () => {
  // Two dictionaries of the same size (so only the id or the bytes tell them apart), each with its own id.
  const dicts = [seededText(501, 64 << 10), seededText(502, 64 << 10)].map((bytes) => ({ id: idOf(ObjectKind.Dictionary, bytes), bytes }));
  const inputs = Array.from({ length: 24 }, (_, i) => seededText(600 + i, 2000 + i * 311));
  // Seeded order of (input, dictionary, keyed or not), sync and on the background threads alike.
  for (const seed of [21, 22]) {
    const jobs: { i: number; d: number; keyed: boolean; job: number }[] = [];
    for (let k = 0; k < 60; k++) {
      const i = (seed * 31 + k * 17) % inputs.length;
      const d = ((seed + k) >> 1) % 2;
      const keyed = (seed * k) % 3 !== 0;
      const dict = keyed ? dicts[d]! : dicts[d]!.bytes;
      const alone = zstdDictCompress(inputs[i]!, 3, dicts[d]!.bytes);
      assert.ok(zstdDictCompress(inputs[i]!, 3, dict).equals(alone), `seed ${seed}, step ${k}: the sync frame`);
      assert.ok(zstdDictDecompress(alone, -1, dict).equals(inputs[i]!), `seed ${seed}, step ${k}: decoded`);
      const out = Buffer.alloc(inputs[i]!.length);
      assert.equal(zstdDictDecompressInto(alone, out, -1, dict), out.length);
      assert.ok(out.equals(inputs[i]!));
      jobs.push({ i, d, keyed, job: zstdCompressStart(inputs[i]!, 3, dict) });
    }
    for (const { i, d, job } of jobs) assert.ok(zstdCompressResult(job)!.equals(zstdDictCompress(inputs[i]!, 3, dicts[d]!.bytes)), `seed ${seed}: the job's frame`);
  }
  // A frame decoded with the other dictionary (digested right after this one, same size) is not
  // its input: the id chose the dictionary (the Store's re-hash catches such bytes; the frame
  // carries no checksum of its own).
  const frame = zstdDictCompress(inputs[0]!, 3, dicts[0]!);
  assert.ok(zstdDictDecompress(frame, -1, dicts[0]!).equals(inputs[0]!));
  let wrong: Buffer | undefined;
  try {
    wrong = zstdDictDecompress(frame, inputs[0]!.length, dicts[1]!);
  } catch (e) {
    assert.ok(e instanceof LayerFsError && e.code === 'ERR_CORRUPT');
  }
  assert.ok(!wrong?.equals(inputs[0]!), 'decoded with the other dictionary');
  assert.throws(() => zstdDictCompress(inputs[0]!, 3, { id: Buffer.alloc(5), bytes: dicts[0]!.bytes }), /32 bytes/);
});

test('small objects of every size round-trip; text is grouped compressed, random stays raw', () => {
  const store = Store.create(join(tempDir(), 's.sqlite'));
  try {
    const text: Buffer[] = [];
    const random: Buffer[] = [];
    const all = SIZES.flatMap((n, i) => [seededText(100 + i, n), seededBytes(200 + i, n)]);
    store.writeSync((w) => {
      for (const [i, data] of all.entries()) (i % 2 ? random : text).push(w.add(ObjectKind.Blob, data));
    });
    all.forEach((data) => assert.ok(store.objects.get(idOf(ObjectKind.Blob, data), ObjectKind.Blob).equals(data), `size ${data.length}`));
    assert.ok(codecs(store, text.slice(2)).every((c) => c === Codec.Zstd), 'text is compressed');
    const bigRandom = random.filter((_, i) => SIZES[i]! >= 4096);
    assert.ok(codecs(store, bigRandom).every((c) => c === Codec.Raw), 'random is raw');
    const stored = store.db.prepare('SELECT sum(length(data)) AS n FROM packs').get() as { n: number };
    const canonical = all.reduce((a, b) => a + b.length, 0);
    assert.ok(stored.n < canonical * 0.8, `stored ${stored.n} of ${canonical}`);
  } finally {
    store.close();
  }
});

test('large files: compressible chunks go to frames of a chunk row and read back at random', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const big = seededText(5, 3 * 1024 * 1024 + 333);
  const noise = seededBytes(6, 1024 * 1024 + 5);
  writeFileSync(join(src, 'big.txt'), big);
  writeFileSync(join(src, 'noise.bin'), noise);
  const c = Client.create(join(dir, 's.sqlite'));
  try {
    await c.initLayerStack({ name: 'x', source: src });
    assert.ok(c.cat('x', 'big.txt').equals(big));
    assert.ok(c.cat('x', 'noise.bin').equals(noise));
    assert.equal(c.verify().ok, true);
  } finally {
    c.close();
  }
  const db = new Database(join(dir, 's.sqlite'), { readonly: true });
  try {
    const byCodec = db.prepare('SELECT codec, count(*) AS n FROM objects WHERE kind = 2 GROUP BY codec').all() as { codec: number; n: number }[];
    assert.ok(byCodec.some((r) => r.codec === Codec.Zstd) && byCodec.some((r) => r.codec === Codec.Raw), JSON.stringify(byCodec));
    const frames = db.prepare('SELECT count(DISTINCT pack || \':\' || offset) AS n FROM objects WHERE kind = 2 AND codec = 1').get() as { n: number };
    // Frames of about CHUNK_FRAME_TARGET bytes, cut at chunk boundaries (so a little over it).
    const most = Math.ceil(big.length / CHUNK_FRAME_TARGET);
    assert.ok(frames.n >= most * 0.7 && frames.n <= most, `about ${CHUNK_FRAME_TARGET} B frames (${frames.n})`);
  } finally {
    db.close();
  }
});

test('deltas: a file edited many times is stored as bounded delta chains and reads back', () => {
  const store = Store.create(join(tempDir(), 's.sqlite'));
  try {
    const versions = hintedChain(store, seededText(9, 30_000), 31, (prev, v) => {
      const at = (v * 997) % prev.length;
      return Buffer.concat([prev.subarray(0, at), Buffer.from(`edit ${v}`), prev.subarray(at + 3)]);
    });
    const prevId = versions[versions.length - 1]![0];
    const depths = versions.map(([id]) => depthOf(store, id));
    assert.ok(Math.max(...depths) <= DELTA_MAX_DEPTH, `depths ${depths.join(',')}`);
    assert.ok(depths.filter((d) => d > 0).length >= 25, `most versions are deltas: ${depths.join(',')}`);
    for (const [id, data] of versions) assert.ok(store.objects.get(id, ObjectKind.Blob).equals(data));
    // A delta only pays for small edits; an unrelated file stays whole.
    const other = seededBytes(10, 30_000);
    const otherId = store.writeSync((w) => {
      const id = w.add(ObjectKind.Blob, other);
      w.suggestBase(id, prevId);
      return id;
    });
    assert.notEqual(store.objects.locator(otherId)!.codec, Codec.Delta);
  } finally {
    store.close();
  }
});

test('a Workspace-style edit of a tree stores changed files and rewritten pages as deltas', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let i = 0; i < 300; i++) writeFileSync(join(src, `f${i}.txt`), seededText(i, 2000 + i));
  const c = Client.create(join(dir, 's.sqlite'));
  try {
    await c.initLayerStack({ name: 'x', source: src });
    for (let i = 0; i < 300; i += 30) writeFileSync(join(src, `f${i}.txt`), Buffer.concat([seededText(i, 2000 + i).subarray(0, 1000), Buffer.from('EDIT'), seededText(i, 2000 + i).subarray(1004)]));
    await c.initLayerStack({ name: 'y', source: src });
    assert.equal(c.verify().ok, true);
  } finally {
    c.close();
  }
});

test('LAYERFS_COMPRESS=0 writes every object raw', () => {
  const store = Store.create(join(tempDir(), 's.sqlite'));
  try {
    const data = [seededText(1, 5000), seededText(2, 70_000)];
    const ids = withEnv('LAYERFS_COMPRESS', '0', () => store.writeSync((w) => data.map((d) => w.add(ObjectKind.Blob, d))));
    assert.deepEqual(codecs(store, ids), [Codec.Raw, Codec.Raw]);
    ids.forEach((id, i) => assert.ok(store.objects.get(id).equals(data[i]!)));
  } finally {
    store.close();
  }
});

/** Rewrites a Store written raw into the exact format-1 schema (the columns format 2 added dropped). */
function makeFormat1(path: string): void {
  const db = new Database(path);
  try {
    asFormat(db, 1);
  } finally {
    db.close();
  }
}

test('a format-1 Store reads as is read-only and is upgraded in place when opened writable', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), seededText(1, 9000));
  const path = join(dir, 's.sqlite');
  const c = Client.create(path);
  await withEnv('LAYERFS_COMPRESS', '0', () => c.initLayerStack({ name: 'x', source: src }));
  c.close();
  makeFormat1(path);

  const ro = Store.open(path, { readonly: true });
  try {
    assert.equal(ro.info.formatVersion, 1);
    const id = idOf(ObjectKind.Blob, seededText(1, 9000));
    assert.ok(ro.objects.get(id, ObjectKind.Blob).equals(seededText(1, 9000)));
  } finally {
    ro.close();
  }
  const c2 = Client.connect(path);
  try {
    assert.equal(c2.info().formatVersion, FORMAT_VERSION);
    assert.ok(c2.cat('x', 'a.txt').equals(seededText(1, 9000)));
    writeFileSync(join(src, 'b.txt'), seededText(2, 9000));
    await c2.initLayerStack({ name: 'y', source: src });
    assert.ok(c2.cat('y', 'b.txt').equals(seededText(2, 9000)));
    assert.equal(c2.verify().ok, true);
  } finally {
    c2.close();
  }
});

test('a Store of a newer format is refused with ERR_UNSUPPORTED_FORMAT naming the versions', () => {
  const path = join(tempDir(), 's.sqlite');
  Store.create(path).close();
  const db = new Database(path);
  db.pragma(`user_version = ${FORMAT_VERSION + 1}`);
  db.close();
  assert.throws(
    () => Store.open(path),
    (e: unknown) =>
      e instanceof LayerFsError && e.code === 'ERR_UNSUPPORTED_FORMAT' && e.message.includes(`version ${FORMAT_VERSION + 1}`) && e.message.includes(`1 to ${FORMAT_VERSION}`),
  );
});

test('a format-2 Store reads as is read-only and is upgraded to the current format when opened writable', () => {
  const path = join(tempDir(), 's.sqlite');
  const text = seededText(3, 5000);
  const s = Store.create(path);
  const id = s.writeSync((w) => w.add(ObjectKind.Blob, text));
  s.close();
  const db = new Database(path);
  asFormat(db, 2);
  db.close();
  const ro = Store.open(path, { readonly: true });
  try {
    assert.equal(ro.info.formatVersion, 2);
    assert.ok(ro.objects.get(id, ObjectKind.Blob).equals(text));
  } finally {
    ro.close();
  }
  const rw = Store.open(path);
  try {
    assert.equal(rw.info.formatVersion, FORMAT_VERSION);
    assert.ok(rw.objects.get(id, ObjectKind.Blob).equals(text));
  } finally {
    rw.close();
  }
});

test('deltas with several bases: a piece straddling old chunks decodes against them all; bad base lists are ERR_CORRUPT', () => {
  const path = join(tempDir(), 's.sqlite');
  const store = Store.create(path);
  try {
    // Three old random "chunks" and a new piece made of the end of the first, all of the second
    // and the start of the third, with a 4 KiB overwrite: against one base it would not pay.
    const old = [seededBytes(21, 12_000), seededBytes(22, 9000), seededBytes(23, 15_000)];
    const oldIds = store.writeSync((w) => old.map((o) => w.add(ObjectKind.Chunk, o)));
    const piece = Buffer.concat([old[0]!.subarray(5000), old[1]!, old[2]!.subarray(0, 8000)]);
    seededBytes(24, 4096).copy(piece, 6000);
    const single = store.writeSync((w) => {
      const id = w.add(ObjectKind.Chunk, piece);
      w.suggestBase(id, oldIds[1]!);
      return id;
    });
    assert.notEqual(store.objects.locator(single)!.codec, Codec.Delta, 'one base leaves most bytes literal');
    const piece2 = Buffer.from(piece);
    piece2[0] = piece2[0]! ^ 1;
    const multi = store.writeSync((w) => {
      const id = w.add(ObjectKind.Chunk, piece2);
      w.suggestBase(id, oldIds);
      return id;
    });
    const loc = store.objects.locator(multi)!;
    assert.equal(loc.codec, Codec.Delta);
    assert.ok(loc.base!.equals(Buffer.concat(oldIds)));
    assert.ok(loc.length < 4096 + 1024, `delta of ${loc.length} bytes for a 4 KiB change`);
    assert.ok(store.objects.get(multi, ObjectKind.Chunk).equals(piece2));
    assertStoreIntact(path);
  } finally {
    store.close();
  }
  // A base list that is not whole ids, or names a missing object, fails the read with ERR_CORRUPT.
  for (const bad of [Buffer.alloc(33, 1), Buffer.alloc(0), Buffer.alloc(32 * 5, 2), Buffer.alloc(64, 3)]) {
    const db = new Database(path);
    const row = db.prepare('SELECT id FROM objects WHERE codec = ?').pluck().get(Codec.Delta) as Buffer;
    db.prepare('UPDATE objects SET base = ? WHERE id = ?').run(bad, row);
    db.close();
    assertCorruptRead(path, row);
  }
});

test('a damaged compressed group: reads of its members fail with ERR_CORRUPT, never return wrong bytes; verify names them', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let i = 0; i < 20; i++) writeFileSync(join(src, `t${i}.txt`), seededText(i, 3000));
  const path = join(dir, 's.sqlite');
  const c = Client.create(path);
  await c.initLayerStack({ name: 'x', source: src });
  c.close();
  const victim = idOf(ObjectKind.Blob, seededText(3, 3000));
  damageStored(path, victim, Codec.Zstd, 0x40);
  const c2 = Client.connect(path);
  try {
    // Which members the flipped byte reaches depends on the frame's layout: each either reads
    // back exactly or fails typed, and at least one fails.
    let failed = 0;
    for (let i = 0; i < 20; i++) {
      try {
        assert.ok(c2.cat('x', `t${i}.txt`).equals(seededText(i, 3000)));
      } catch (e) {
        assert.ok(e instanceof LayerFsError && e.code === 'ERR_CORRUPT', String(e));
        failed++;
      }
    }
    assert.ok(failed > 0);
    const v = c2.verify();
    assert.equal(v.ok, false);
    assert.equal(v.damaged.length, failed);
  } finally {
    c2.close();
  }
});

test('Workspace commits: an edited small file and the new chunk of an edited large file become deltas (pages this small are not tried)', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const small = seededText(21, 6000);
  const large = seededBytes(22, 600_000);
  writeFileSync(join(src, 'small.txt'), small);
  writeFileSync(join(src, 'large.bin'), large);
  const path = join(dir, 's.sqlite');
  const c = Client.create(path);
  try {
    const init = await c.initLayerStack({ name: 'x', source: src });
    const branch = c.forkBranch({ name: 'work', layer: init.layer.id });
    const ws = await c.createWorkspace(branch.name, { at: join(dir, 'ws') });
    const small2 = Buffer.concat([small.subarray(0, 3000), Buffer.from('a small edit'), small.subarray(3000)]);
    const large2 = Buffer.from(large);
    large2.write('overwritten in the middle', 300_000);
    writeFileSync(join(dir, 'ws', 'small.txt'), small2);
    writeFileSync(join(dir, 'ws', 'large.bin'), large2);
    const r = await c.commitWorkspace(ws.id);
    assert.equal(r.outcome, 'Created');
    assert.ok(c.cat(branch.name, 'small.txt').equals(small2));
    assert.ok(c.cat(branch.name, 'large.bin').equals(large2));
    assert.equal(c.verify().ok, true);
  } finally {
    c.close();
  }
  const db = new Database(path, { readonly: true });
  try {
    const deltas = db.prepare('SELECT kind, count(*) AS n FROM objects WHERE codec = 2 GROUP BY kind').all() as { kind: number; n: number }[];
    const n = (k: number) => deltas.find((d) => d.kind === k)?.n ?? 0;
    assert.ok(n(ObjectKind.Blob) === 1 && n(ObjectKind.Chunk) >= 1, JSON.stringify(deltas));
  } finally {
    db.close();
  }
});

test('Workspace commits: every new chunk of a large file edited in several places becomes a delta against the old chunks it overlaps', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const large = seededBytes(31, 2_000_000);
  writeFileSync(join(src, 'large.bin'), large);
  const path = join(dir, 's.sqlite');
  const c = Client.create(path);
  const chunkIds = (): Map<string, number> => {
    const db = new Database(path, { readonly: true });
    try {
      const rows = db.prepare('SELECT id, codec FROM objects WHERE kind = ?').all(ObjectKind.Chunk) as { id: Buffer; codec: number }[];
      return new Map(rows.map((r) => [r.id.toString('hex'), r.codec]));
    } finally {
      db.close();
    }
  };
  try {
    const init = await c.initLayerStack({ name: 'x', source: src });
    const branch = c.forkBranch({ name: 'work', layer: init.layer.id });
    const ws = await c.createWorkspace(branch.name, { at: join(dir, 'ws') });
    const before = chunkIds();
    // Five 16-byte overwrites far apart: each re-cuts one to three chunks, several per commit,
    // which a content group would have sealed before the editor's hint came.
    const large2 = Buffer.from(large);
    for (const at of [200_000, 500_000, 800_000, 1_100_000, 1_400_000]) seededBytes(at, 16).copy(large2, at);
    writeFileSync(join(dir, 'ws', 'large.bin'), large2);
    assert.equal((await c.commitWorkspace(ws.id)).outcome, 'Created');
    assert.ok(c.cat(branch.name, 'large.bin').equals(large2));
    assert.equal(c.verify().ok, true);
    const fresh = [...chunkIds()].filter(([id]) => !before.has(id));
    assert.ok(fresh.length >= 5, `${fresh.length} new chunks`);
    assert.deepEqual(fresh.filter(([, codec]) => codec !== Codec.Delta), [], 'every new chunk is a delta');
  } finally {
    c.close();
  }
});
