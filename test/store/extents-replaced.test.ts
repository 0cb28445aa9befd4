/**
 * replacedChunks (the delta-base hint for an edited large file) against a brute-force pairing
 * over both trees' full chunk lists, on seeded random edits; and the reads it makes follow the
 * edit, not the file size.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { buildExtentTree, decodeExtentNode, replacedChunks, type Extent } from '../../lib/store/tree/extents.js';
import { rng } from '../helpers/random.js';

const chunkId = (tag: string) => createHash('sha256').update(tag).digest();

function tree(extents: Extent[], nodes: Map<string, Buffer>): Buffer {
  return buildExtentTree(extents, (node) => {
    const id = createHash('sha256').update('node').update(node).digest();
    nodes.set(id.toString('latin1'), node);
    return id;
  });
}

function leaves(root: Buffer, nodes: Map<string, Buffer>): { id: Buffer; offset: number }[] {
  const out: { id: Buffer; offset: number }[] = [];
  let offset = 0;
  const visit = (id: Buffer): void => {
    const n = decodeExtentNode(nodes.get(id.toString('latin1'))!, 'node');
    n.ids.forEach((c, i) => {
      if (n.level === 0) {
        out.push({ id: c, offset });
        offset += n.lengths[i]!;
      } else visit(c);
    });
  };
  visit(root);
  return out;
}

/** Every chunk of `after` not anywhere in `before`, with the chunk of `before` covering its offset. */
function bruteForce(before: Buffer, after: Buffer, nodes: Map<string, Buffer>): Map<string, string> {
  const a = leaves(before, nodes);
  const known = new Set(a.map((c) => c.id.toString('hex')));
  const out = new Map<string, string>();
  for (const c of leaves(after, nodes)) {
    if (known.has(c.id.toString('hex'))) continue;
    let base = a[0]!;
    for (const o of a) if (o.offset <= c.offset) base = o;
    out.set(c.id.toString('hex'), base.id.toString('hex'));
  }
  return out;
}

test('replacedChunks pairs new chunks with old ones: exactly the full walk for in-place edits, valid bases for any edit', () => {
  const rand = rng(7);
  for (let round = 0; round < 60; round++) {
    const nodes = new Map<string, Buffer>();
    const inPlace = round % 2 === 0;
    const n = 1 + Math.floor(rand() * 3000);
    const before: Extent[] = Array.from({ length: n }, (_, i) => ({ id: chunkId(`r${round}c${i}`), length: 1 + Math.floor(rand() * 20000) }));
    const after = before.slice();
    const edits = 1 + Math.floor(rand() * 4);
    for (let e = 0; e < edits; e++) {
      const at = Math.floor(rand() * after.length);
      const kind = inPlace ? 0 : rand();
      const fresh = { id: chunkId(`r${round}e${e}`), length: inPlace ? after[at]!.length : 1 + Math.floor(rand() * 20000) };
      if (kind < 0.4) after[at] = fresh;
      else if (kind < 0.7) after.splice(at, 0, fresh);
      else if (after.length > 1) after.splice(at, 1);
    }
    const a = tree(before, nodes);
    const b = tree(after, nodes);
    const expected = bruteForce(a, b, nodes);
    const got = replacedChunks(a, b, (id) => nodes.get(id.toString('latin1'))!, 1).map((p) => ({ id: p.id, base: p.bases[0]! }));
    const oldIds = new Set(leaves(a, nodes).map((c) => c.id.toString('hex')));
    if (inPlace) {
      // Same offsets on both sides: the replaced chunk is never in a shared subtree.
      assert.deepEqual(new Map(got.map((p) => [p.id.toString('hex'), p.base.toString('hex')])), expected, `round ${round}`);
      continue;
    }
    // Inserts and deletes shift offsets, so a base may come from a neighbour that changed rather
    // than from a shifted chunk both trees share; it is only a hint, but always an old chunk.
    for (const p of got) assert.ok(oldIds.has(p.base.toString('hex')), `round ${round}: base is not an old chunk`);
    for (const p of got) assert.ok(expected.has(p.id.toString('hex')) || oldIds.has(p.id.toString('hex')), `round ${round}: unknown chunk`);
  }
});

test('replacedChunks reads a few nodes per level for one replaced chunk in a large file', () => {
  const nodes = new Map<string, Buffer>();
  const before: Extent[] = Array.from({ length: 32000 }, (_, i) => ({ id: chunkId(`big${i}`), length: 16384 }));
  const after = before.slice();
  after[16000] = { id: chunkId('edited'), length: 16384 };
  const a = tree(before, nodes);
  const b = tree(after, nodes);
  let reads = 0;
  const got = replacedChunks(a, b, (id) => {
    reads++;
    return nodes.get(id.toString('latin1'))!;
  }, 4).map((p) => ({ id: p.id, base: p.bases[0]! }));
  assert.deepEqual(got.map((p) => [p.id.toString('hex'), p.base.toString('hex')]), [[chunkId('edited').toString('hex'), chunkId('big16000').toString('hex')]]);
  const height = decodeExtentNode(nodes.get(a.toString('latin1'))!, 'root').level + 1;
  assert.ok(reads <= 2 * height + 2, `${reads} node reads for a tree of height ${height}`);
});

test('replacedChunks offers a new chunk every old chunk its bytes overlap, in order, at most maxBases', () => {
  const nodes = new Map<string, Buffer>();
  // Old cuts every 10,000 bytes; an edit re-cut [20,000, 50,000) into pieces of 12,000 / 18,000.
  const before: Extent[] = Array.from({ length: 200 }, (_, i) => ({ id: chunkId(`o${i}`), length: 10000 }));
  const after = [...before.slice(0, 2), { id: chunkId('n0'), length: 12000 }, { id: chunkId('n1'), length: 18000 }, ...before.slice(5)];
  const a = tree(before, nodes);
  const b = tree(after, nodes);
  const load = (id: Buffer) => nodes.get(id.toString('latin1'))!;
  const hex = (got: { id: Buffer; bases: Buffer[] }[]) => got.map((p) => [p.id.toString('hex'), p.bases.map((x) => x.toString('hex'))]);
  const o = (i: number) => chunkId(`o${i}`).toString('hex');
  // n0 = [20,000, 32,000) overlaps o2, o3; n1 = [32,000, 50,000) overlaps o3, o4.
  assert.deepEqual(hex(replacedChunks(a, b, load, 4)), [
    [chunkId('n0').toString('hex'), [o(2), o(3)]],
    [chunkId('n1').toString('hex'), [o(3), o(4)]],
  ]);
  assert.deepEqual(hex(replacedChunks(a, b, load, 1)), [
    [chunkId('n0').toString('hex'), [o(2)]],
    [chunkId('n1').toString('hex'), [o(3)]],
  ]);
});
