import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ByteReader, ByteWriter } from '../../lib/format/bytes.js';
import { keySerial, serialKey } from '../../lib/store/tree/inode.js';
import { Rng } from '../helpers/random.js';

/** The definition: zig-zag, then 7 bits at a time, low first, in bigint arithmetic. */
function sv64Bytes(v: bigint): Buffer {
  const out: number[] = [];
  let z = v >= 0n ? v << 1n : (-v << 1n) - 1n;
  while (z >= 0x80n) {
    out.push(Number(z & 0x7fn) | 0x80);
    z >>= 7n;
  }
  out.push(Number(z));
  return Buffer.from(out);
}

test('sv64 writes the bytes of its definition, at the 32- and 64-bit edges and for seeded values of every length', () => {
  const seed = Number(process.env.SEED ?? Date.now() % 1e9);
  console.log(`seed ${seed}`);
  const rng = new Rng(seed);
  const values: bigint[] = [0n, 1n, -1n, 63n, 64n, -64n, -65n, 2n ** 31n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 63n, 2n ** 64n, -(2n ** 64n), 2n ** 70n];
  for (let i = 0; i < 20_000; i++) {
    const bits = BigInt(rng.below(67));
    const word = (BigInt(rng.u32()) << 64n) | (BigInt(rng.u32()) << 32n) | BigInt(rng.u32());
    const v = word & ((1n << bits) - 1n);
    values.push(rng.below(2) === 0 ? v : -v);
  }
  for (const v of values) {
    const bytes = new ByteWriter(4).sv64(v).finish();
    assert.deepEqual(bytes, sv64Bytes(v), `sv64(${v}), seed ${seed}`);
    if (v >= -(2n ** 63n) && v < 2n ** 63n) assert.equal(new ByteReader(bytes, 'value').sv64(), v, `round trip of ${v}, seed ${seed}`);
  }
});

test('serialKey is the 8-byte big-endian serial, across the 32-bit edge and up to 2^53 - 1', () => {
  for (const s of [0, 1, 255, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 5, 2 ** 40 + 12_345, 2 ** 53 - 1]) {
    const expected = Buffer.alloc(8);
    expected.writeBigUInt64BE(BigInt(s));
    assert.deepEqual(serialKey(s), expected, `serial ${s}`);
    assert.equal(keySerial(serialKey(s)), s);
  }
});
