// decodeRun (native/run_decode.cc) against a model: random pack rows of raw chunks, zstd frames and
// frames compressed with a dictionary (chunks tiling a frame, or only some of a frame's chunks, in
// order or not), some bytes damaged, some locators pointing outside the row, 1 to 4 threads, the
// run given the frames' dictionary or (sometimes) another one. Every chunk the addon marks verified
// equals the model's bytes; every chunk whose stored bytes decode to its id is marked verified;
// nothing else is. The seed is printed (LAYERFS_MODEL_SEED picks one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeRun, DOMAIN, mallocStats, objectId, RUN_FIELDS, RunCodec, startRun, zstdCompress, zstdDecompress, zstdDictCompress, zstdDictDecompress } from '../../lib/native/index.js';
import { rng, seededBytes } from '../helpers/random.js';

interface ModelChunk {
  bytes: Buffer;
  id: Buffer;
  codec: RunCodec;
  srcOff: number;
  srcLen: number;
  at: number;
}

function textBytes(next: () => number, n: number): Buffer {
  const words = ['alpha', 'beta', 'gamma', 'delta', 'return', 'const', '{', '}', '\n'];
  let s = '';
  while (s.length < n) s += words[Math.floor(next() * words.length)] + ' ';
  return Buffer.from(s.slice(0, n));
}

/** A pack row of frames and raw chunks, and the chunks a run reads from it (a random selection, in row order or shuffled). */
function makeRow(next: () => number, seed: number, dict?: Buffer): { row: Buffer; chunks: ModelChunk[] } {
  const parts: Buffer[] = [];
  const chunks: ModelChunk[] = [];
  let off = 0;
  const frames = 1 + Math.floor(next() * 6);
  for (let f = 0; f < frames; f++) {
    const sizes = Array.from({ length: 1 + Math.floor(next() * 5) }, () => 1 + Math.floor(next() * 20_000));
    const bytes = sizes.map((n, i) => (next() < 0.5 ? textBytes(next, n) : seededBytes(seed * 100 + f * 10 + i, n)));
    if (next() < 0.4) {
      for (const b of bytes) {
        chunks.push({ bytes: b, id: objectId(DOMAIN.chunk, b), codec: RunCodec.Raw, srcOff: off, srcLen: b.length, at: 0 });
        parts.push(b);
        off += b.length;
      }
      continue;
    }
    const withDict = dict !== undefined && next() < 0.5;
    const frame = withDict ? zstdDictCompress(Buffer.concat(bytes), 3, dict) : zstdCompress(Buffer.concat(bytes), 1);
    let at = 0;
    for (const b of bytes) {
      chunks.push({ bytes: b, id: objectId(DOMAIN.chunk, b), codec: withDict ? RunCodec.Dict : RunCodec.Zstd, srcOff: off, srcLen: frame.length, at });
      at += b.length;
    }
    parts.push(frame);
    off += frame.length;
  }
  return { row: Buffer.concat(parts), chunks };
}

/** What the model says chunk c reads as from `row`: its bytes, or null when it cannot be verified. */
function modelRead(row: Buffer, c: ModelChunk, dict?: Buffer): Buffer | null {
  if (c.srcOff + c.srcLen > row.length) return null;
  let data: Buffer;
  try {
    const stored = row.subarray(c.srcOff, c.srcOff + c.srcLen);
    if (c.codec === RunCodec.Raw) data = stored;
    else data = (c.codec === RunCodec.Dict ? zstdDictDecompress(stored, -1, dict!) : zstdDecompress(stored, -1)).subarray(c.at, c.at + c.bytes.length);
  } catch {
    return null;
  }
  return data.length === c.bytes.length && objectId(DOMAIN.chunk, data).equals(c.id) ? data : null;
}

test('decodeRun marks exactly the chunks whose stored bytes verify, and writes their bytes', { timeout: 120_000 }, () => {
  const seed = process.env.LAYERFS_MODEL_SEED === 'random' ? Date.now() % 1e9 : Number(process.env.LAYERFS_MODEL_SEED ?? 4242);
  console.log(`seed ${seed}`);
  const next = rng(seed);
  const dicts = [textBytes(next, 8192), textBytes(next, 8192)];
  for (let round = 0; round < 300; round++) {
    const { row, chunks: all } = makeRow(next, seed + round, dicts[0]);
    // The run is given the frames' dictionary, or now and then another one (nothing in its frames verifies then).
    const dict = next() < 0.15 ? dicts[1]! : dicts[0]!;
    const key = next() < 0.5 ? objectId(DOMAIN.chunk, dict) : undefined;
    // A run: the row's chunks in order, a subset, or (rarely) shuffled; sometimes damage.
    let run = all.filter(() => next() < 0.85);
    if (run.length === 0) run = [all[0]!];
    if (next() < 0.1) run = run.sort(() => next() - 0.5);
    const damaged = Buffer.from(row);
    if (next() < 0.3) {
      const at = Math.floor(next() * damaged.length);
      damaged[at] = damaged[at]! ^ (1 + Math.floor(next() * 255));
    }
    if (next() < 0.1) run[Math.floor(next() * run.length)] = { ...run[0]!, srcOff: damaged.length - 3, srcLen: 100 };
    if (next() < 0.1) run[Math.floor(next() * run.length)] = { ...run[0]!, id: Buffer.alloc(32, 7) };
    const spec = new Float64Array(run.length * RUN_FIELDS);
    run.forEach((c, k) => spec.set([c.srcOff, c.srcLen, c.codec, c.at, c.bytes.length], k * RUN_FIELDS));
    const ids = Buffer.concat(run.map((c) => c.id));
    const total = run.reduce((s, c) => s + c.bytes.length, 0);
    const out = Buffer.alloc(total + (next() < 0.5 ? 0 : 100), 0xee);
    const ok = new Uint8Array(run.length);
    const threads = 1 + Math.floor(next() * 4);
    decodeRun(damaged, spec, ids, out, ok, threads, key ? { id: key, bytes: dict } : dict);
    let at = 0;
    run.forEach((c, k) => {
      const want = modelRead(damaged, c, dict);
      assert.equal(ok[k], want ? 1 : 0, `round ${round} chunk ${k} (${RunCodec[c.codec]}): verified ${ok[k]}, model ${want ? 1 : 0}`);
      if (want) assert.ok(out.subarray(at, at + c.bytes.length).equals(want), `round ${round} chunk ${k} bytes`);
      at += c.bytes.length;
    });
    assert.ok(out.subarray(total).equals(Buffer.alloc(out.length - total, 0xee)), 'nothing written past the run');
    // In place: the raw chunks alone, verified where they lie in the row.
    const raw = run.filter((c) => c.codec === RunCodec.Raw);
    if (raw.length > 0) {
      const rs = new Float64Array(raw.length * RUN_FIELDS);
      raw.forEach((c, k) => rs.set([c.srcOff, c.srcLen, c.codec, 0, c.bytes.length], k * RUN_FIELDS));
      const rok = new Uint8Array(raw.length);
      decodeRun(damaged, rs, Buffer.concat(raw.map((c) => c.id)), null, rok, threads);
      raw.forEach((c, k) => assert.equal(rok[k], modelRead(damaged, c) ? 1 : 0, `round ${round} raw chunk ${k} in place`));
    }
  }
});

test('decodeRun rejects bad shapes without touching memory it was not given', () => {
  const row = Buffer.from('hello');
  const id = objectId(DOMAIN.chunk, row);
  const ok = new Uint8Array(1);
  assert.throws(() => decodeRun(row, new Float64Array(4), id, Buffer.alloc(5), ok), /spec/);
  assert.throws(() => decodeRun(row, new Float64Array([0, 5, 1, 0, 5]), id, null, ok), /output/);
  assert.throws(() => decodeRun(row, new Float64Array([0, 5, 0, 0, 5]), Buffer.alloc(8), Buffer.alloc(5), ok), /ids/);
  // A dictionary frame without the dictionary, an unknown codec, a key that is not an id.
  assert.throws(() => decodeRun(row, new Float64Array([0, 5, 3, 0, 5]), id, Buffer.alloc(5), ok), /dictionary/);
  assert.throws(() => decodeRun(row, new Float64Array([0, 5, 2, 0, 5]), id, Buffer.alloc(5), ok), /codec/);
  assert.throws(() => decodeRun(row, new Float64Array([0, 5, 3, 0, 5]), id, Buffer.alloc(5), ok, 1, { id: Buffer.alloc(5), bytes: row }), /32 bytes/);
  // An output too small for the run: nothing verified, nothing written.
  const small = Buffer.alloc(4, 1);
  decodeRun(row, new Float64Array([0, 5, 0, 0, 5]), id, small, ok);
  assert.equal(ok[0], 0);
  assert.ok(small.equals(Buffer.alloc(4, 1)));
  decodeRun(row, new Float64Array([0, 5, 0, 0, 5]), id, Buffer.alloc(5), ok);
  assert.equal(ok[0], 1);
});

test('a started run gives what decodeRun gives, and a task never waited for is finished when collected', () => {
  const next = rng(77);
  const dict = textBytes(next, 8192);
  const { row, chunks } = makeRow(next, 77, dict);
  const spec = new Float64Array(chunks.length * RUN_FIELDS);
  chunks.forEach((c, k) => spec.set([c.srcOff, c.srcLen, c.codec, c.at, c.bytes.length], k * RUN_FIELDS));
  const ids = Buffer.concat(chunks.map((c) => c.id));
  const total = chunks.reduce((s, c) => s + c.bytes.length, 0);
  const out = Buffer.alloc(total);
  const ok = new Uint8Array(chunks.length);
  const task = startRun(row, spec, ids, out, ok, 2, dict);
  task.wait();
  task.wait();
  assert.ok(ok.every((v) => v === 1));
  assert.ok(out.equals(Buffer.concat(chunks.map((c) => c.bytes))));
  for (let i = 0; i < 50; i++) startRun(row, spec, ids, Buffer.alloc(total), new Uint8Array(chunks.length), 2, dict);
  (globalThis as { gc?: () => void }).gc?.();
});

test('a task waited for holds none of its native state while its wrapper lives on', (t) => {
  // A mount daemon's reader thread starts a task per stretch of every READ; wrappers promoted to
  // the old generation are collected only at a full collection, so a task's native state must go
  // at wait(), not at collection (the daemon's resident set grew ~4 MiB per GiB read before).
  if (mallocStats() === null) return t.skip('glibc only: mallinfo2 counts what malloc holds');
  const n = 256;
  const bytes = Array.from({ length: n }, (_, i) => seededBytes(9000 + i, 64));
  const row = Buffer.concat(bytes);
  const spec = new Float64Array(n * RUN_FIELDS);
  bytes.forEach((b, k) => spec.set([k * 64, 64, RunCodec.Raw, 0, 64], k * RUN_FIELDS));
  const ids = Buffer.concat(bytes.map((b) => objectId(DOMAIN.chunk, b)));
  const kept: ReturnType<typeof startRun>[] = [];
  const before = mallocStats()!.inUse;
  for (let i = 0; i < 2000; i++) {
    const ok = new Uint8Array(n);
    const task = startRun(row, spec, ids, null, ok, 1);
    task.wait();
    assert.ok(ok.every((v) => v === 1));
    kept.push(task);
  }
  const grown = mallocStats()!.inUse - before;
  // Each task's state holds its n chunks twice over (~12 KiB): 2,000 of them ~24 MiB if kept.
  assert.ok(grown < 4 * 1024 * 1024, `malloc holds ${grown} bytes more with ${kept.length} waited tasks alive`);
});
