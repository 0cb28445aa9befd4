// Property test of the page map's two states kept without a native map (a stored base untouched,
// or no base at all): random writes, truncations, rebases and reads give exactly what the native
// map alone gives (native/napi_cow.cc, driven directly). Replay with LAYERFS_COW_LAZY_SEED=<seed>.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COW_PAGE, CowPages, type CowSegment } from '../../lib/native/index.js';
import { native, type RawCowPages } from '../../lib/native/binding.js';
import { rng } from '../helpers/random.js';

const SEED = Number(process.env.LAYERFS_COW_LAZY_SEED ?? Date.now() % 0x7fffffff);
console.log(`cow-lazy seed ${SEED} (LAYERFS_COW_LAZY_SEED=${SEED} to replay)`);

function rawPlan(p: RawCowPages, pos: number, len: number): CowSegment[] {
  let out = new Float64Array(3 * 8);
  let n = p.planRead(pos, len, out);
  if (n * 3 > out.length) {
    out = new Float64Array(n * 3);
    n = p.planRead(pos, len, out);
  }
  const segs: CowSegment[] = [];
  for (let i = 0; i < n * 3; i += 3) segs.push({ source: out[i]!, pos: out[i + 1]!, len: out[i + 2]! });
  return segs;
}

function pairs(r: Float64Array | null): { start: number; len: number }[] | null {
  if (r === null) return null;
  const out: { start: number; len: number }[] = [];
  for (let i = 0; i < r.length; i += 2) out.push({ start: r[i]!, len: r[i + 1]! });
  return out;
}

test(`a page map without its native part answers as the native map does (seed ${SEED})`, () => {
  const random = rng(SEED);
  const pick = (n: number) => Math.floor(random() * n);
  for (let file = 0; file < 300; file++) {
    const base = pick(4) === 0 ? 0 : pick(6 * COW_PAGE);
    const lazy = new CowPages(base);
    const raw = new native.CowPages(base);
    for (let step = 0; step < 40; step++) {
      const size = raw.size;
      const pos = pick(size + 2 * COW_PAGE);
      const len = pick(3) === 0 ? 0 : 1 + pick(3 * COW_PAGE);
      const op = pick(10);
      const at = `file ${file} base ${base} step ${step} op ${op} pos ${pos} len ${len}`;
      if (op < 4) {
        const copies = pairs(raw.write(pos, len));
        assert.deepEqual(lazy.write(pos, len), copies, at);
        if (copies) {
          raw.commitWrite(pos, len);
          lazy.commitWrite(pos, len);
        }
      } else if (op < 6) {
        const to = pick(3) === 0 ? 0 : pick(size + COW_PAGE);
        raw.truncate(to);
        lazy.truncate(to);
      } else if (op === 6) {
        const to = pick(4) === 0 ? 0 : pick(5 * COW_PAGE);
        raw.rebase(to);
        lazy.rebase(to);
      } else if (op === 7) {
        const extents = pick(2) === 0;
        const r = raw.changedRanges(extents);
        const want: [number, number][] = [];
        for (let i = 0; i < r.length; i += 2) want.push([r[i]!, r[i + 1]!]);
        assert.deepEqual(lazy.changedRanges(extents), want, at);
      }
      assert.equal(lazy.size, raw.size, at);
      assert.equal(lazy.validBase, raw.validBase, at);
      assert.equal(lazy.dirtyPages, raw.dirtyPages, at);
      const readLen = pick(4 * COW_PAGE);
      assert.deepEqual(lazy.planRead(pos, readLen), rawPlan(raw, pos, readLen), at);
    }
  }
});
