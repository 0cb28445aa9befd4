import { test } from 'node:test';
import assert from 'node:assert/strict';
import { objectId } from '../../lib/native/index.js';
import { entries, lookup, TreeBuilder, TreeKind, updateTree, type Mutation, type PageIO, type TreeNode } from '../../lib/store/tree/pages.js';
import { decodeNode } from '../../lib/store/tree/pages.js';
import { rng } from '../helpers/random.js';

/** An in-memory page store: enough to test tree shape and canonical ids. */
function memoryIO(): PageIO & { size: () => number; loads: number } {
  const pages = new Map<string, Buffer>();
  const io = {
    loads: 0,
    load(kind: TreeKind, id: Buffer): TreeNode {
      io.loads++;
      return decodeNode(kind, pages.get(id.toString('hex'))!, 'page');
    },
    save(_kind: TreeKind, data: Buffer): Buffer {
      const id = objectId('layerfs/page/v1', data);
      pages.set(id.toString('hex'), data);
      return id;
    },
    size: () => pages.size,
  };
  return io;
}

function key(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

function build(io: PageIO, map: Map<number, string>): Buffer | null {
  const b = new TreeBuilder(TreeKind.Inodes, io);
  for (const k of [...map.keys()].sort((a, b) => a - b)) b.pushEntry(key(k), Buffer.from(map.get(k)!));
  return b.finish();
}

test('incremental updates give the same root as building from scratch (canonical pages)', () => {
  const io = memoryIO();
  const r = rng(42);
  const map = new Map<number, string>();
  for (let i = 1; i <= 5000; i++) map.set(i, `v${i}`);
  let root = build(io, map);
  for (let round = 0; round < 60; round++) {
    const muts = new Map<number, string | null>();
    const n = 1 + Math.floor(r() * 40);
    for (let i = 0; i < n; i++) {
      const k = 1 + Math.floor(r() * 6000);
      const del = r() < 0.4;
      muts.set(k, del ? null : `r${round}-${k}`);
    }
    const sorted: Mutation[] = [...muts.entries()].sort((a, b) => a[0] - b[0]).map(([k, v]) => ({ key: key(k), value: v === null ? null : Buffer.from(v) }));
    root = updateTree(TreeKind.Inodes, io, root, sorted);
    for (const [k, v] of muts) {
      if (v === null) map.delete(k);
      else map.set(k, v);
    }
    assert.ok(root && build(io, map)!.equals(root), `round ${round}: incremental root differs from a fresh build`);
  }
  const all = [...entries(TreeKind.Inodes, io, root)].map(([k, v]) => [Number(k.readBigUInt64BE(0)), v.toString()]);
  assert.deepEqual(all, [...map.entries()].sort((a, b) => a[0] - b[0]));
  for (const k of [1, 2, 777, 5999, 6001]) assert.equal(lookup(TreeKind.Inodes, io, root, key(k))?.toString(), map.get(k));
});

test('an edit rewrites O(depth) pages, not the tree', () => {
  const io = memoryIO();
  const map = new Map<number, string>();
  for (let i = 1; i <= 100_000; i++) map.set(i, `value-${i}`);
  const root = build(io, map)!;
  const before = io.size();
  io.loads = 0;
  const next = updateTree(TreeKind.Inodes, io, root, [{ key: key(50_000), value: Buffer.from('changed') }]);
  assert.ok(next && !next.equals(root));
  assert.ok(io.size() - before <= 8, `wrote ${io.size() - before} pages`);
  assert.ok(io.loads <= 8, `loaded ${io.loads} pages`);
});

test('deleting everything gives an empty tree; entries() resumes from a key', () => {
  const io = memoryIO();
  const map = new Map<number, string>();
  for (let i = 1; i <= 300; i++) map.set(i, `v${i}`);
  const root = build(io, map);
  const from = [...entries(TreeKind.Inodes, io, root, key(250))].map(([k]) => Number(k.readBigUInt64BE(0)));
  assert.deepEqual(from, Array.from({ length: 51 }, (_, i) => 250 + i));
  const empty = updateTree(TreeKind.Inodes, io, root, [...map.keys()].map((k) => ({ key: key(k), value: null })));
  assert.equal(empty, null);
});
