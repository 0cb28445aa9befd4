/**
 * Small commits are recorded before the write lock (Store.writeStaged). Two Workspaces of one
 * Store, each through its own connection, write the same new content; one commits while the
 * other's commit is staged (the stage is where another process's commit would run): the staged
 * commit went stale, is made again under the lock, and both store exactly what their
 * Workspaces hold. A small commit of large files keeps its chunk rows until the lock.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Client } from '../../lib/sdk/index.js';
import { NamespaceEditor, type Store } from '../../lib/store/index.js';
import { rng } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

const ROUNDS = 24;
const storeOf = (c: Client): Store => (c as unknown as { store: Store }).store;

test(`a small commit staged while another stores the same new content is made again, exactly (${ROUNDS} rounds)`, async () => {
  const seed = Number(process.env.SEED ?? 1 + Math.floor(Math.random() * 1e6));
  console.log(`seed ${seed}`);
  const r = rng(seed);
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let f = 0; f < 40; f++) writeFileSync(join(src, `f${f}.txt`), `file ${f}\n`.repeat(10 + f));
  const storePath = join(dir, 's.layerfs');
  const a = Client.create(storePath);
  const b = Client.connect(storePath);
  try {
    const init = await a.initLayerStack({ name: 'p', source: src });
    a.forkBranch({ name: 'a', layer: init.layer.id });
    a.forkBranch({ name: 'b', layer: init.layer.id });
    const wa = await a.createWorkspace('a', { at: join(dir, 'wa') });
    const wb = await b.createWorkspace('b', { at: join(dir, 'wb') });
    // A's commit runs between the end of B's stage and B's taking the write lock.
    const sb = storeOf(b);
    const writeStaged = sb.writeStaged.bind(sb);
    let results: string[] = [];
    sb.writeStaged = (stage, publish) =>
      writeStaged(async (w) => {
        const staged = await stage(w);
        results.push((await a.commitWorkspace(wa.id)).outcome);
        return staged;
      }, publish);
    for (let round = 0; round < ROUNDS; round++) {
      // The same new file in both, and an edit of its own in each.
      const same = `shared ${round} ${r()}\n`.repeat(50 + Math.floor(r() * 100));
      for (const ws of [wa, wb]) {
        writeFileSync(join(ws.path, `same-${round}.txt`), same);
        writeFileSync(join(ws.path, `f${Math.floor(r() * 40)}.txt`), `${ws.path} ${round}\n`.repeat(1 + Math.floor(r() * 30)));
      }
      results = [];
      const rb = await b.commitWorkspace(wb.id);
      assert.deepEqual(results, ['Created'], `seed ${seed}, round ${round}: A's commit, once`);
      assert.equal(rb.outcome, 'Created', `seed ${seed}, round ${round}`);
      assert.equal(sb.meter.stale, round + 1, `seed ${seed}, round ${round}: B's stage went stale`);
    }
    assert.equal(storeOf(a).meter.stale, 0);
    // A fresh handle reads every file of both Branches back exactly.
    const fresh = Client.connect(storePath);
    try {
      for (const [branch, ws] of [['a', wa], ['b', wb]] as const) {
        for (let f = 0; f < 40; f++) assert.deepEqual(fresh.cat(branch, `f${f}.txt`), readFileSync(join(ws.path, `f${f}.txt`)), `seed ${seed}: ${branch} f${f}`);
        for (let round = 0; round < ROUNDS; round++) assert.deepEqual(fresh.cat(branch, `same-${round}.txt`), readFileSync(join(ws.path, `same-${round}.txt`)));
        assert.ok((await fresh.workspaceStatus(ws.id)).clean);
      }
      assertIntact(fresh);
    } finally {
      await fresh.close();
    }
  } finally {
    await b.close();
    await a.close();
  }
});

test('a small commit with large files (chunk rows held until the lock) stores them exactly', async () => {
  const seed = Number(process.env.SEED ?? 1 + Math.floor(Math.random() * 1e6));
  console.log(`seed ${seed}`);
  const r = rng(seed);
  const text = (n: number): Buffer => {
    const words = ['layer', 'commit', 'branch', 'workspace', '{', '}', '\n', 'const', 'export'];
    const parts: string[] = [];
    let len = 0;
    while (len < n) {
      const w = words[Math.floor(r() * words.length)]! + ' ';
      parts.push(w);
      len += w.length;
    }
    return Buffer.from(parts.join('')).subarray(0, n);
  };
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const big = text(3 << 20);
  writeFileSync(join(src, 'big.txt'), big);
  writeFileSync(join(src, 'small.txt'), 'small\n');
  const storePath = join(dir, 's.layerfs');
  const c = Client.create(storePath);
  try {
    const init = await c.initLayerStack({ name: 'p', source: src });
    c.forkBranch({ name: 'b', layer: init.layer.id });
    const ws = await c.createWorkspace('b', { at: join(dir, 'ws') });
    const expected = new Map<string, Buffer>();
    let current = big;
    for (let round = 0; round < 4; round++) {
      // An edit in the middle of the large file (its new chunks wait in the edit group or a row of
      // their own), a new large file, and a small one.
      const at = Math.floor(r() * (current.length - 1000));
      current = Buffer.concat([current.subarray(0, at), Buffer.from(`edit ${round} `), current.subarray(at + 10)]);
      expected.set('big.txt', current);
      expected.set(`new-${round}.txt`, text((2 << 20) + Math.floor(r() * 100_000)));
      expected.set('small.txt', Buffer.from(`small ${round}\n`));
      for (const [p, b] of expected) writeFileSync(join(ws.path, p), b);
      const res = await c.commitWorkspace(ws.id);
      assert.equal(res.outcome, 'Created', `seed ${seed}, round ${round}`);
      assert.equal(storeOf(c).meter.stale, 0);
    }
    const fresh = Client.connect(storePath);
    try {
      for (const [p, b] of expected) assert.ok(fresh.cat('b', p).equals(b), `seed ${seed}: ${p}`);
      assertIntact(fresh);
    } finally {
      await fresh.close();
    }
  } finally {
    await c.close();
  }
});

test('a staged commit whose trees fail to write leaves its handle out of any transaction: the next commit stores exactly', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let f = 0; f < 10; f++) writeFileSync(join(src, `f${f}.txt`), `file ${f}\n`.repeat(20));
  const storePath = join(dir, 's.layerfs');
  const c = Client.create(storePath);
  const finish = NamespaceEditor.prototype.finish;
  try {
    const init = await c.initLayerStack({ name: 'p', source: src });
    c.forkBranch({ name: 'b', layer: init.layer.id });
    const ws = await c.createWorkspace('b', { at: join(dir, 'ws') });
    const db = (storeOf(c) as unknown as { db: { inTransaction: boolean } }).db;
    let inSnapshot: boolean | undefined;
    // The trees are written in one read snapshot (commit.ts), then the write fails as a damaged
    // read would.
    NamespaceEditor.prototype.finish = function (this: NamespaceEditor) {
      finish.call(this);
      inSnapshot = db.inTransaction;
      throw new Error('read failed');
    };
    writeFileSync(join(ws.path, 'f3.txt'), 'edited\n');
    await assert.rejects(c.commitWorkspace(ws.id), /read failed/);
    assert.equal(inSnapshot, true, 'the trees were written inside a read transaction');
    assert.equal(db.inTransaction, false);
    NamespaceEditor.prototype.finish = finish;
    writeFileSync(join(ws.path, 'f4.txt'), 'edited too\n');
    assert.equal((await c.commitWorkspace(ws.id)).outcome, 'Created');
    assert.deepEqual(c.cat('b', 'f3.txt'), Buffer.from('edited\n'));
    assert.deepEqual(c.cat('b', 'f4.txt'), Buffer.from('edited too\n'));
    assert.ok((await c.workspaceStatus(ws.id)).clean);
    assertIntact(c);
  } finally {
    NamespaceEditor.prototype.finish = finish;
    await c.close();
  }
});
