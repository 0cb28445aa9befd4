// A sealed group's live objects (those not moved out as deltas) are compacted in the group's own
// buffer: each keeps its bytes, at its new offset, in the order appended, and the frame's data is
// exactly them back to back. Seeded: the seed is printed and SEED=N replays it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Group, GroupBuffers, type Pending } from '../../lib/store/object-groups.js';
import { ObjectKind } from '../../lib/store/index.js';
import { Rng, seededBytes } from '../helpers/random.js';

const ROUNDS = 300;

test(`a sealed group's live objects stay readable at their offsets after some moved out (${ROUNDS} seeded groups)`, () => {
  const seed = Number(process.env.SEED ?? 1 + Math.floor(Math.random() * 1e6));
  console.log(`seed ${seed}`);
  const r = new Rng(seed);
  const pool = new GroupBuffers();
  for (let round = 0; round < ROUNDS; round++) {
    const g = new Group(true, 1024 + r.below(64 * 1024), pool);
    const want = new Map<Pending, Buffer>();
    const count = 1 + r.below(60);
    for (let i = 0; i < count; i++) {
      const data = seededBytes(seed, r.below(5) === 0 ? 0 : 1 + r.below(9000), round * 64 + i);
      const p: Pending = { id: Buffer.alloc(32, i), kind: ObjectKind.Chunk, group: g, offset: g.append(data), length: data.length };
      g.items.push(p);
      want.set(p, data);
    }
    // Some move out as deltas (ObjectWriter.detach), none, or all.
    const mode = r.below(4);
    for (const p of g.items) {
      if (mode === 0 || (mode !== 3 && r.below(3) !== 0)) continue;
      p.delta = { base: Buffer.alloc(32), frame: Buffer.alloc(1), depth: 1 };
      g.moved++;
    }
    g.sealed = true;
    const order = [...want.keys()].filter((p) => !p.delta);
    const held = g.live();
    if (order.length === 0) {
      assert.equal(held, undefined, `round ${round}: nothing live`);
      continue;
    }
    assert.ok(held, `round ${round}`);
    assert.deepEqual(held.live, order, `round ${round}: the live objects, in order`);
    assert.deepEqual(held.data, Buffer.concat(order.map((p) => want.get(p)!)), `round ${round}: the frame's data`);
    let at = 0;
    held.live.forEach((p, i) => {
      assert.equal(held.at[i], at, `round ${round}: object ${i}'s offset in the frame`);
      assert.equal(p.offset, at, `round ${round}: object ${i}'s offset in the group`);
      assert.deepEqual(g.buf.subarray(p.offset, p.offset + p.length), want.get(p), `round ${round}: object ${i} read from the group`);
      at += p.length;
    });
    // Asked again (a group judged later), the same answer.
    const again = g.live()!;
    assert.deepEqual(again.data, held.data, `round ${round}: live() again`);
    pool.release(g);
  }
});
