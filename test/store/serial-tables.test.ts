// The serial-keyed sets and maps answer as JavaScript's Set and Map do: seeded runs of adds,
// sets, deletes and clears (the tables grow and halve as they fill and empty; dense serials, as
// an overlay makes them, and sparse ones up to 2^53 − 1, clustered so that deletions shift
// entries back across the table's end), against the built-in collections as the model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SerialMap, SerialObjectMap, SerialSet } from '../../lib/store/serial-tables.js';
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

test('SerialSet, SerialMap and SerialObjectMap answer as Set and Map (seeded)', () => {
  for (let seed = 1; seed <= 60; seed++) {
    const r = new Rng(seed);
    const set = new SerialSet();
    const map = new SerialMap();
    const objects = new SerialObjectMap<{ v: number }>();
    const objectModel = new Map<number, { v: number }>();
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
        const o = { v };
        objects.set(s, o);
        objectModel.set(s, o);
      } else if (op < 90) {
        assert.equal(set.delete(s), setModel.delete(s), where(i));
        assert.equal(map.delete(s), mapModel.delete(s), where(i));
        assert.equal(objects.delete(s), objectModel.delete(s), where(i));
      } else if (op < 99) {
        assert.equal(set.has(s), setModel.has(s), where(i));
        assert.equal(map.get(s), mapModel.get(s), where(i));
        assert.equal(objects.get(s), objectModel.get(s), where(i));
      } else {
        set.clear();
        setModel.clear();
        map.clear();
        mapModel.clear();
        objects.clear();
        objectModel.clear();
      }
      assert.equal(set.size, setModel.size, where(i));
      assert.equal(map.size, mapModel.size, where(i));
      assert.equal(objects.size, objectModel.size, where(i));
    }
    const byValue = (a: { v: number }, b: { v: number }) => a.v - b.v;
    assert.deepEqual(objects.values().sort(byValue), [...objectModel.values()].sort(byValue), `seed ${seed}`);
    assert.deepEqual([...objects].sort((a, b) => a - b), [...objectModel.keys()].sort((a, b) => a - b), `seed ${seed}`);
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

test('a table that grew for a whole-tree change halves as it empties, and still answers', () => {
  const objects = new SerialObjectMap<{ s: number }>();
  for (let s = 1; s <= 100_000; s++) objects.set(s, { s });
  const full = (objects as unknown as { keys: Float64Array }).keys.length;
  for (let s = 1; s <= 99_990; s++) assert.equal(objects.delete(s), true);
  const after = (objects as unknown as { keys: Float64Array }).keys.length;
  assert.ok(after * 512 <= full, `slots ${full} → ${after}`);
  assert.equal(objects.size, 10);
  for (let s = 99_991; s <= 100_000; s++) assert.equal(objects.get(s)?.s, s);
  assert.equal(objects.get(5), undefined);
});

test('SerialObjectMap.retain keeps exactly what its test says yes to, at the size it needs (seeded)', () => {
  for (let seed = 1; seed <= 20; seed++) {
    const r = new Rng(seed);
    const objects = new SerialObjectMap<{ s: number }>();
    const model = new Map<number, { s: number }>();
    const n = 1 + r.below(50_000);
    for (let i = 0; i < n; i++) {
      const s = serialOf(r, n * 3);
      const o = { s };
      objects.set(s, o);
      model.set(s, o);
    }
    const mod = 1 + r.below(10);
    objects.retain((o) => o.s % mod === 0);
    for (const s of [...model.keys()]) if (s % mod !== 0) model.delete(s);
    assert.equal(objects.size, model.size, `seed ${seed}`);
    for (const [s, o] of model) assert.equal(objects.get(s), o, `seed ${seed}: serial ${s}`);
    let seen = 0;
    objects.forEach((o) => {
      assert.equal(model.get(o.s), o, `seed ${seed}: forEach gave serial ${o.s}`);
      seen++;
    });
    assert.equal(seen, model.size, `seed ${seed}: forEach`);
    const slots = (objects as unknown as { keys: Float64Array }).keys.length;
    assert.ok(model.size * 4 <= slots * 3 && (slots <= 16 || model.size * 8 > slots), `seed ${seed}: ${model.size} in ${slots} slots`);
    // Still a working table afterwards.
    objects.set(2 ** 40, { s: 2 ** 40 });
    assert.equal(objects.get(2 ** 40)?.s, 2 ** 40);
  }
});
