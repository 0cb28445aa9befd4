import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  chunkAndHash,
  Chunker,
  chunkLengths,
  DEFAULT_CHUNKER_PARAMS,
  DOMAIN,
  objectId,
  type ChunkerParams,
} from '../../lib/native/index.js';
import { seededBytes, seededInts, sum } from './helpers.js';
import { referenceChunkLengths, type RefParams } from './reference-fastcdc.js';
import { goldenInput } from './golden-input.js';

interface Golden {
  params: Record<string, RefParams>;
  cases: { seed: number; length: number; params: string; lengths: number[] }[];
}
const golden = JSON.parse(readFileSync(new URL('./fixtures/chunker-golden.json', import.meta.url), 'utf8')) as Golden;

const D = DEFAULT_CHUNKER_PARAMS;

function streamed(data: Uint8Array, splits: number[], params?: ChunkerParams): number[] {
  const c = new Chunker(params);
  const out: number[] = [];
  let at = 0;
  for (const s of [...splits].sort((a, b) => a - b)) {
    out.push(...c.push(data.subarray(at, s)));
    at = s;
  }
  out.push(...c.push(data.subarray(at)));
  out.push(...c.finish());
  return out;
}

function checkShape(lengths: number[], total: number, p: RefParams): void {
  assert.equal(sum(lengths), total);
  lengths.forEach((l, i) => {
    assert.ok(l <= p.maxSize, `chunk ${i} longer than maxSize`);
    if (i < lengths.length - 1) assert.ok(l > p.minSize, `chunk ${i} not longer than minSize`);
    assert.ok(l > 0);
  });
}

describe('chunkLengths', () => {
  test('golden vectors', () => {
    assert.ok(golden.cases.length >= 15);
    for (const c of golden.cases) {
      const params = golden.params[c.params]!;
      const data = goldenInput(c.seed, c.length);
      assert.deepEqual(chunkLengths(data, params), c.lengths, `seed ${c.seed} length ${c.length} params ${c.params}`);
      assert.deepEqual(referenceChunkLengths(data, params), c.lengths, `reference: seed ${c.seed} length ${c.length}`);
    }
  });

  test('defaults are min 8 KiB / avg 16 KiB / max 32 KiB, level 2', () => {
    assert.deepEqual({ ...D }, { minSize: 8192, avgSize: 16384, maxSize: 32768, normalization: 2 });
    const data = seededBytes(77, 1 << 20);
    assert.deepEqual(chunkLengths(data), chunkLengths(data, D));
  });

  test('matches the byte-at-a-time reference', () => {
    const paramSets: RefParams[] = [
      { ...D },
      { minSize: 64, avgSize: 256, maxSize: 1024, normalization: 2 },
      { minSize: 100, avgSize: 128, maxSize: 129, normalization: 3 },
      { minSize: 1000, avgSize: 4096, maxSize: 5000, normalization: 0 },
      { minSize: 4097, avgSize: 8192, maxSize: 65535, normalization: 1 },
    ];
    let seed = 500;
    for (const p of paramSets) {
      for (const n of [0, 1, 63, 64, 65, 1000, 50_000, 333_333]) {
        const data = seededBytes(seed++, n);
        const got = chunkLengths(data, p);
        assert.deepEqual(got, referenceChunkLengths(data, p), `n=${n} params=${JSON.stringify(p)}`);
        checkShape(got, n, p);
      }
    }
  });

  test('boundary sizes', () => {
    const base = seededBytes(42, D.maxSize * 2);
    for (const n of [0, 1, D.minSize - 1, D.minSize, D.minSize + 1, D.avgSize, D.maxSize - 1, D.maxSize, D.maxSize + 1]) {
      const data = base.subarray(0, n);
      const got = chunkLengths(data);
      assert.deepEqual(got, referenceChunkLengths(data, D), `n=${n}`);
      checkShape(got, n, D);
      if (n === 0) assert.deepEqual(got, []);
      if (n > 0 && n <= D.minSize) assert.deepEqual(got, [n]);
    }
  });

  test('all-zero input is cut at maxSize', () => {
    assert.deepEqual(chunkLengths(Buffer.alloc(100_000)), [32768, 32768, 32768, 1696]);
    assert.deepEqual(chunkLengths(Buffer.alloc(65536)), [32768, 32768]);
  });

  test('cut points are content-defined: an insertion only moves nearby cuts', () => {
    const data = seededBytes(8, 2 << 20);
    const edited = Buffer.concat([data.subarray(0, 1_000_000), Buffer.from('inserted!'), data.subarray(1_000_000)]);
    const ends = (ls: number[]): number[] => ls.reduce<number[]>((acc, l) => [...acc, (acc.at(-1) ?? 0) + l], []);
    const a = ends(chunkLengths(data));
    const b = new Set(ends(chunkLengths(edited)).map((e) => e - 9));
    const shared = a.filter((e) => e > 1_100_000 && b.has(e)).length;
    assert.ok(shared >= a.filter((e) => e > 1_100_000).length - 1, 'cuts after the edit re-synchronize');
  });
});

describe('Chunker (streaming)', () => {
  test('any split gives the whole-buffer lengths', () => {
    const data = seededBytes(11, 3 << 20);
    const whole = chunkLengths(data);
    for (let round = 0; round < 25; round++) {
      const splits = seededInts(1 + (round % 7) * 9, data.length + 1, 1000 + round);
      assert.deepEqual(streamed(data, splits), whole, `round ${round}`);
    }
  });

  test('tiny pushes, with other params', () => {
    const p = { minSize: 64, avgSize: 256, maxSize: 2048, normalization: 1 };
    const data = seededBytes(12, 20_000);
    const whole = chunkLengths(data, p);
    const c = new Chunker(p);
    const out: number[] = [];
    for (let i = 0; i < data.length; i += 3) out.push(...c.push(data.subarray(i, i + 3)));
    out.push(...c.finish());
    assert.deepEqual(out, whole);
  });

  test('empty pushes and finish on nothing', () => {
    const c = new Chunker();
    assert.deepEqual(c.push(Buffer.alloc(0)), []);
    assert.deepEqual(c.finish(), []);
  });

  test('finish resets for a new stream', () => {
    const c = new Chunker();
    const a = seededBytes(13, 100_000);
    const first = [...c.push(a), ...c.finish()];
    const second = [...c.push(a), ...c.finish()];
    assert.deepEqual(first, second);
    assert.deepEqual(first, chunkLengths(a));
  });
});

describe('chunkAndHash', () => {
  test('lengths and chunk-domain ids in one pass', () => {
    const data = seededBytes(14, 1_500_000);
    const chunks = chunkAndHash(data);
    assert.deepEqual(
      chunks.map((c) => c.length),
      chunkLengths(data),
    );
    let offset = 0;
    for (const c of chunks) {
      assert.equal(c.offset, offset);
      assert.deepEqual(c.id, objectId(DOMAIN.chunk, data.subarray(offset, offset + c.length)));
      offset += c.length;
    }
  });

  test('custom tag and params; empty input', () => {
    const p = { minSize: 256, avgSize: 1024, maxSize: 4096 };
    const data = seededBytes(15, 30_000);
    const chunks = chunkAndHash(data, p, 'test/tag');
    assert.deepEqual(chunks[0]!.id, objectId('test/tag', data.subarray(0, chunks[0]!.length)));
    assert.deepEqual(chunkAndHash(Buffer.alloc(0)), []);
  });

  test('ids are exact for every message shape (batched SIMD hashing across chunks)', () => {
    // Chunk lengths straddling multiples of 1024 after the tag prefix, tags of many lengths, and
    // forced cuts that make prefix+chunk exactly 3 or 4 KiB.
    const random = seededBytes(16, 400_000);
    const zeros = Buffer.alloc(50_000);
    const cases: [Buffer, ChunkerParams, string][] = [
      [random, { minSize: 64, avgSize: 1024, maxSize: 4096 }, DOMAIN.chunk],
      [random, { minSize: 900, avgSize: 2048, maxSize: 3000 }, 'x'],
      [random, { minSize: 2000, avgSize: 4096, maxSize: 40000 }, 't'.repeat(511)],
      [random, { minSize: 2000, avgSize: 4096, maxSize: 40000 }, 't'.repeat(512)],
      [random, { minSize: 2000, avgSize: 4096, maxSize: 40000 }, 't'.repeat(1500)],
      [random, D, ''],
      [zeros, { minSize: 64, avgSize: 2048, maxSize: 4079 }, DOMAIN.chunk],
      [zeros, { minSize: 64, avgSize: 2048, maxSize: 3055 }, DOMAIN.chunk],
      [zeros, { minSize: 64, avgSize: 1024, maxSize: 2031 }, DOMAIN.chunk],
    ];
    for (const [data, params, tag] of cases) {
      const chunks = chunkAndHash(data, params, tag);
      assert.ok(chunks.length > 1);
      for (const c of chunks) {
        const expected = objectId(tag, data.subarray(c.offset, c.offset + c.length));
        assert.deepEqual(c.id, expected, `tag length ${tag.length}, chunk at ${c.offset}+${c.length}`);
      }
    }
  });
});
