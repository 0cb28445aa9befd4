// Incremental extent-tree edits equal a fresh build, on synthetic trees deep enough to have
// several levels (random ids: one entry in 64 ends a node).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { idOf, ObjectKind } from '../../lib/store/index.js';
import { buildExtentTree, decodeExtentNode, type Extent } from '../../lib/store/tree/extents.js';
import { chunkAt, replaceExtents, type LoadedNode, type NodeSource } from '../../lib/fuse/extents.js';
import { Rng } from '../helpers/random.js';

class MemNodes implements NodeSource {
  readonly map = new Map<string, LoadedNode>();
  saves = 0;
  save = (data: Buffer): Buffer => {
    const id = idOf(ObjectKind.Extents, data);
    const n = decodeExtentNode(data, 'node');
    const starts = new Float64Array(n.ids.length + 1);
    for (let i = 0; i < n.ids.length; i++) starts[i + 1] = starts[i]! + n.lengths[i]!;
    this.map.set(id.toString('latin1'), { level: n.level, ids: n.ids.map((x) => Buffer.from(x)), lengths: n.lengths, starts });
    this.saves++;
    return id;
  };
  node(id: Buffer): LoadedNode {
    const n = this.map.get(id.toString('latin1'));
    if (!n) throw new Error('missing node');
    return n;
  }
}

function rnd(seed: number): (n: number) => number {
  const r = new Rng(seed);
  return (n) => r.below(n);
}

// Ids from the seeded generator, so every run takes the same paths.
const entry = (r: (n: number) => number): Extent => ({ id: Buffer.from(Array.from({ length: 32 }, () => r(256))), length: 1 + r(50000) });

test('replacing runs of extents gives the tree a fresh build gives, touching few nodes', () => {
  const r = rnd(5);
  for (let round = 0; round < 40; round++) {
    const n = [1, 2, 63, 64, 65, 4000, 9000][round % 7]! + r(50);
    let list: Extent[] = Array.from({ length: n }, () => entry(r));
    const mem = new MemNodes();
    let root = buildExtentTree(list, mem.save);
    for (let edit = 0; edit < 8; edit++) {
      const offsets = [0];
      for (const e of list) offsets.push(offsets[offsets.length - 1]! + e.length);
      const size = offsets[list.length]!;
      const i = r(list.length);
      const tail = r(4) === 0;
      const j = tail ? list.length : Math.min(list.length, i + 1 + r(5));
      const fresh = Array.from({ length: tail ? r(6) : 1 + r(5) }, () => entry(r));
      if (fresh.length === 0 && i === 0 && j === list.length) fresh.push(entry(r));
      // Lookups by offset agree with the list.
      const probe = r(size);
      const k = offsets.findIndex((o, idx) => o <= probe && probe < offsets[idx + 1]!);
      assert.equal(chunkAt(mem, root, probe).start, offsets[k]);
      const before = mem.saves;
      root = replaceExtents(mem, root, size, { from: offsets[i]!, to: offsets[j]!, entries: fresh }, mem.save);
      const touched = mem.saves - before;
      list = [...list.slice(0, i), ...fresh, ...list.slice(j)];
      const check = new MemNodes();
      assert.ok(buildExtentTree(list, check.save).equals(root), `round ${round} edit ${edit}: equals a fresh build`);
      if (list.length > 1000) assert.ok(touched <= 16, `rewrote ${touched} nodes`);
    }
  }
});

// A cut tail that starts at a node's first entry empties a run of nodes, and a shrinking tree
// must lose levels exactly as a fresh build does (both once failed: ERR_INVALID_ARGUMENT, and a
// root with a single child).
test('cutting tails and collapsing levels equal a fresh build', () => {
  for (let seed = 1; seed < 400; seed++) {
    const r = rnd(seed);
    let list: Extent[] = Array.from({ length: 64 + r(300) }, () => entry(r));
    const mem = new MemNodes();
    let root = buildExtentTree(list, mem.save);
    for (let edit = 0; edit < 20 && list.length > 0; edit++) {
      const offsets = [0];
      for (const e of list) offsets.push(offsets[offsets.length - 1]! + e.length);
      const i = r(list.length);
      const tail = r(3) === 0;
      const j = tail ? list.length : Math.min(list.length, i + 1 + r(5));
      const fresh = Array.from({ length: tail ? r(2) : r(5) }, () => entry(r));
      if (fresh.length === 0 && i === 0 && j === list.length) fresh.push(entry(r));
      root = replaceExtents(mem, root, offsets[list.length]!, { from: offsets[i]!, to: offsets[j]!, entries: fresh }, mem.save);
      list = [...list.slice(0, i), ...fresh, ...list.slice(j)];
      assert.ok(buildExtentTree(list, new MemNodes().save).equals(root), `seed ${seed} edit ${edit}: equals a fresh build`);
    }
  }
});
