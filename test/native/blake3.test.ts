import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { blake3, Blake3Hasher, DOMAIN, gearTable, objectId } from '../../lib/native/index.js';
import { seededBytes, seededInts } from './helpers.js';
import { referenceBlake3 } from './reference-blake3.js';

interface Vectors {
  cases: { length: number; hash: string }[];
  gearSeed: string;
  gearXof2048: string;
}
const vectors = JSON.parse(readFileSync(new URL('./fixtures/blake3-vectors.json', import.meta.url), 'utf8')) as Vectors;

const i251 = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => i % 251));

describe('blake3', () => {
  test('well-known digests', () => {
    assert.equal(blake3(Buffer.alloc(0)).toString('hex'), 'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262');
    assert.equal(blake3(Buffer.from('abc')).toString('hex'), '6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85');
  });

  test('official test-vector inputs (hashes from b3sum, an independent implementation)', () => {
    assert.equal(vectors.cases.length, 22);
    for (const c of vectors.cases) {
      const input = i251(c.length);
      assert.equal(blake3(input).toString('hex'), c.hash, `length ${c.length}`);
      assert.equal(referenceBlake3(input).toString('hex'), c.hash, `reference, length ${c.length}`);
    }
  });

  test('agrees with the spec transcription on seeded inputs', () => {
    const lengths = [2, 63, 64, 65, 127, 128, 129, 1000, 4095, 65536, 65537, 200_000];
    for (const [k, n] of lengths.entries()) {
      const d = seededBytes(100 + k, n);
      assert.equal(blake3(d).toString('hex'), referenceBlake3(d).toString('hex'), `length ${n}`);
    }
  });

  test('accepts Uint8Array views without copying semantics issues', () => {
    const big = seededBytes(3, 5000);
    const view = new Uint8Array(big.buffer, big.byteOffset + 17, 3000);
    assert.deepEqual(blake3(view), blake3(Buffer.from(view)));
  });
});

describe('Blake3Hasher', () => {
  test('any split of the input gives the one-shot digest', () => {
    const d = seededBytes(9, 300_000);
    const cuts = [...new Set(seededInts(40, d.length, 10))].sort((a, b) => a - b);
    const h = new Blake3Hasher();
    let at = 0;
    for (const c of [...cuts, d.length]) {
      h.update(d.subarray(at, c));
      at = c;
    }
    assert.deepEqual(h.digest(), blake3(d));
    assert.deepEqual(h.digest(), blake3(d), 'digest does not consume the state');
  });

  test('extended output matches the reference', () => {
    const h = new Blake3Hasher().update(Buffer.from('layerfs'));
    assert.equal(h.digest(200).toString('hex'), referenceBlake3(Buffer.from('layerfs'), 200).toString('hex'));
  });

  test('reset returns to the tagged empty state', () => {
    const h = new Blake3Hasher(DOMAIN.blob).update(Buffer.from('x'));
    h.reset().update(Buffer.from('y'));
    assert.deepEqual(h.digest(), objectId(DOMAIN.blob, Buffer.from('y')));
  });
});

describe('objectId', () => {
  test('is BLAKE3(tag ‖ 0x00 ‖ parts)', () => {
    const a = Buffer.from('hello ');
    const b = Buffer.from('world');
    const expected = blake3(Buffer.concat([Buffer.from(DOMAIN.chunk), Buffer.from([0]), a, b]));
    assert.deepEqual(objectId(DOMAIN.chunk, a, b), expected);
    assert.deepEqual(objectId(DOMAIN.chunk, Buffer.concat([a, b])), expected);
    assert.deepEqual(new Blake3Hasher(DOMAIN.chunk).update(a).update(b).digest(), expected);
  });

  test('domains separate identical bytes', () => {
    const d = Buffer.from('same bytes');
    const ids = [DOMAIN.chunk, DOMAIN.blob, DOMAIN.content].map((t) => objectId(t, d).toString('hex'));
    assert.equal(new Set(ids).size, 3);
    assert.notDeepEqual(objectId('a', Buffer.from('bc')), objectId('ab', Buffer.from('c')));
  });

  test('domain tags are the documented strings', () => {
    assert.deepEqual({ ...DOMAIN }, { chunk: 'layerfs/chunk/v1', blob: 'layerfs/blob/v1', content: 'layerfs/content/v1' });
  });

  test('long and non-ASCII tags', () => {
    for (const tag of ['x'.repeat(254), 'x'.repeat(255), 'y'.repeat(300), 'é/日本/v1']) {
      const d = Buffer.from('payload');
      assert.deepEqual(objectId(tag, d), blake3(Buffer.concat([Buffer.from(tag, 'utf8'), Buffer.from([0]), d])), `tag length ${tag.length}`);
    }
  });

  test('no parts hashes the tag alone', () => {
    assert.deepEqual(objectId(DOMAIN.blob), blake3(Buffer.from('layerfs/blob/v1\0')));
  });
});

test('gear table is BLAKE3-XOF of the documented seed (checked against b3sum)', () => {
  const g = gearTable();
  assert.equal(g.length, 256);
  const xof = Buffer.from(vectors.gearXof2048, 'hex');
  assert.equal(vectors.gearSeed, 'layerfs/fastcdc/gear/v1');
  for (let i = 0; i < 256; i++) assert.equal(g[i], xof.readBigUInt64LE(i * 8), `gear[${i}]`);
});
