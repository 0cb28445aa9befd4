// The overlay's serial-keyed sets and maps answer as JavaScript's Set and Map do: seeded runs of
// adds, sets, deletes and clears (dense serials, as an overlay makes them, and sparse ones up to
// 2^53 − 1, clustered so that deletions shift entries back across the table's end), against the
// built-in collections as the model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SerialMap, SerialSet } from '../../lib/fuse/serial-tables.js';
import { Rng } from '../helpers/random.js';

function serialOf(r: Rng, range: number): number {
  switch (r.below(4)) {
    case 0:
      return Number.MAX_SAFE_INTEGER - r.below(64);
    case 1:
      return r.below(2 ** 21) * 2 ** 32 + r.below(64);
    default:
      return r.below(range);
  }
}

test('SerialSet and SerialMap answer as Set and Map (seeded)', () => {
  for (let seed = 1; seed <= 60; seed++) {
    const r = new Rng(seed);
    const set = new SerialSet();
    const map = new SerialMap();
    const setModel = new Set<number>();
    const mapModel = new Map<number, number>();
    const range = 1 + r.below(4000);
    const steps = 200 + r.below(20000);
    const where = (i: number) => `seed ${seed}, step ${i}`;
    for (let i = 0; i < steps; i++) {
      const s = serialOf(r, range);
      const op = r.below(100);
      if (op < 45) {
        set.add(s);
        setModel.add(s);
        const v = r.below(1000);
        map.set(s, v);
        mapModel.set(s, v);
      } else if (op < 90) {
        assert.equal(set.delete(s), setModel.delete(s), where(i));
        assert.equal(map.delete(s), mapModel.delete(s), where(i));
      } else if (op < 99) {
        assert.equal(set.has(s), setModel.has(s), where(i));
        assert.equal(map.get(s), mapModel.get(s), where(i));
      } else {
        set.clear();
        setModel.clear();
        map.clear();
        mapModel.clear();
      }
      assert.equal(set.size, setModel.size, where(i));
      assert.equal(map.size, mapModel.size, where(i));
    }
    assert.deepEqual([...set].sort((a, b) => a - b), [...setModel].sort((a, b) => a - b), `seed ${seed}`);
    for (const [k, v] of mapModel) assert.equal(map.get(k), v, `seed ${seed}: serial ${k}`);
    for (const k of setModel) assert.ok(set.has(k), `seed ${seed}: serial ${k}`);
  }
});

test('a table holds only serials: others are never found, and refused when added', () => {
  const set = new SerialSet();
  const map = new SerialMap();
  for (const bad of [-1, 0.5, 2 ** 53, Number.NaN, Infinity]) {
    assert.equal(set.has(bad), false);
    assert.equal(set.delete(bad), false);
    assert.equal(map.get(bad), undefined);
    assert.throws(() => set.add(bad), RangeError);
    assert.throws(() => map.set(bad, 1), RangeError);
  }
  assert.equal(set.size + map.size, 0);
});
