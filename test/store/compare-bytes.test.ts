import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareBytes } from '../../lib/format/compare.js';
import { Rng } from '../helpers/random.js';

/** Keys as tree pages hold them: short, often sharing a prefix, sometimes one a prefix of the other. */
function key(rng: Rng, base: Buffer): Buffer {
  const keep = rng.below(base.length + 1);
  const tail = Buffer.alloc(rng.below(6));
  for (let i = 0; i < tail.length; i++) tail[i] = rng.below(4) === 0 ? 0xff : rng.below(4);
  return Buffer.concat([base.subarray(0, keep), tail]);
}

test('compareBytes orders keys as Buffer.compare does: empty, equal, prefixes, 0x00 and 0xff bytes, seeded pairs', () => {
  const seed = Number(process.env.SEED ?? Date.now() % 1e9);
  console.log(`seed ${seed}`);
  const rng = new Rng(seed);
  const sign = (n: number) => Math.sign(n);
  const fixed = [Buffer.alloc(0), Buffer.from([0]), Buffer.from([0, 0]), Buffer.from([0xff]), Buffer.from([1, 2, 3]), Buffer.from([1, 2, 3, 0]), Buffer.from([1, 2, 4])];
  for (const a of fixed) for (const b of fixed) assert.equal(sign(compareBytes(a, b)), Buffer.compare(a, b), `${a.toString('hex')} vs ${b.toString('hex')}`);
  const base = Buffer.from('0000000000000007index.d.ts', 'latin1');
  for (let i = 0; i < 20_000; i++) {
    const a = key(rng, base);
    const b = rng.below(8) === 0 ? Buffer.from(a) : key(rng, base);
    assert.equal(sign(compareBytes(a, b)), Buffer.compare(a, b), `seed ${seed}: ${a.toString('hex')} vs ${b.toString('hex')}`);
  }
  // A view into a larger buffer compares by its own bytes only.
  const whole = Buffer.from([9, 1, 2, 3, 9]);
  assert.equal(compareBytes(whole.subarray(1, 4), Buffer.from([1, 2, 3])), 0);
});
