/**
 * Remotes against a real PostgreSQL 15 cluster (started here, as an unprivileged user, on a
 * Unix socket): push, fetch, clone round trips, incremental pushes, untrusted data, resume.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { REMOTE_SCHEMA_VERSION } from '../../lib/remote/index.js';
import { damageStored } from '../helpers/deltas.js';
import { startCluster, type PgCluster } from '../helpers/postgres.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { commitFiles, exported, writeTree } from './fixture.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

let pg: PgCluster;
before(async () => {
  pg = await startCluster();
});
after(() => pg?.stop());

/** A fresh database on the cluster, with the layerfs schema, and its URL. */
let dbs = 0;
async function freshRemote(): Promise<string> {
  const name = `r${++dbs}`;
  pg.psql(`CREATE DATABASE ${name}`);
  return pg.url.replace('/postgres?', `/${name}?`);
}

async function seeded(dir: string, url: string, files?: number) {
  writeTree(dir, files);
  const c = Client.create(join(dir, 'a.sqlite'));
  await c.initLayerStack({ name: 'demo', source: join(dir, 'src') });
  c.remoteAdd('origin', url);
  const init = await c.remoteInit();
  assert.equal(init.to, REMOTE_SCHEMA_VERSION);
  return c;
}

test('push a LayerStack and a Branch, clone them back: same states, both sides verify', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  a.forkBranch({ name: 'work', layer: 'demo' });
  await commitFiles(a, 'work', join(dir, 'ws1'), { 'new.txt': 'hello\n', 'deep/f1.txt': 'changed\n' });
  await commitFiles(a, 'work', join(dir, 'ws2'), { 'deep/er/big2.bin': Buffer.alloc(300_000, 7) }, { message: 'add big2', metadata: { tool: 'bash', callId: 'c2' } });
  const p1 = await a.push('demo');
  assert.equal(p1.outcome, 'Pushed');
  assert.ok(p1.transfer.objects > 10);
  const p2 = await a.push('work');
  assert.equal(p2.outcome, 'Pushed');
  assert.equal(p2.commitsSent, 2);
  assert.equal((await a.push('work')).outcome, 'UpToDate');
  assert.equal((await a.push('demo')).outcome, 'UpToDate');

  const rv = await a.remoteVerify();
  assert.equal(rv.ok, true);
  assert.equal(rv.objectsChecked, a.info().objects);
  const { client: b, result } = await Client.clone(url, join(dir, 'b.sqlite'));
  assert.deepEqual(result.refs.map((r) => `${r.kind}:${r.name}:${r.outcome}`).sort(), ['branch:work:New', 'layerstack:demo:New']);
  assert.deepEqual(exported(b, 'work', join(dir, 'xb')), exported(a, 'work', join(dir, 'xa')));
  assert.deepEqual(exported(b, 'demo', join(dir, 'yb')), exported(a, 'demo', join(dir, 'ya')));
  assert.equal(b.branch('work').id, a.branch('work').id);
  assert.equal(b.branch('work').headCommitId, a.branch('work').headCommitId);
  // Commit notes travel with their Commits (their ids cover them).
  assert.deepEqual(b.log('work'), a.log('work'));
  assert.equal(b.log('work')[0]!.message, 'add big2');
  assert.deepEqual(b.log('work')[0]!.metadata, { tool: 'bash', callId: 'c2' });
  assertIntact(a);
  assertIntact(b);

  // The clone continues the Branch and pushes; the first Store fetches it as origin/work.
  await commitFiles(b, 'work', join(dir, 'ws3'), { 'from-b.txt': 'b\n' });
  const pb = await b.push('work');
  assert.equal(pb.commitsSent, 1);
  const f = await a.fetch();
  assert.ok(f.transfer.objects > 0);
  assert.equal(a.remoteRefs().find((r) => r.ref === 'origin/work')?.head, b.branch('work').headCommitId);
  assert.equal(a.cat('origin/work', 'from-b.txt').toString(), 'b\n');
  // A fetch never moves a local Branch.
  assert.notEqual(a.branch('work').headCommitId, b.branch('work').headCommitId);
  // A Branch forked from the remote's LayerStack head.
  a.forkBranch({ name: 'mine', layer: 'origin/demo' });
  assert.equal(a.branch('mine').baseLayerId, a.layer('demo').id);
  assertIntact(a);
  a.close();
  b.close();
});

test('an incremental push sends only the objects the new Commit added', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url, 600);
  a.forkBranch({ name: 'work', layer: 'demo' });
  await a.push('work');
  const before = a.info().objects;
  await commitFiles(a, 'work', join(dir, 'ws'), { 'deep/f2.txt': 'edit 2\n', 'deep/f4.txt': 'edit 4\n', 'f3.txt': 'edit 3\n' });
  const added = a.info().objects - before;
  const p = await a.push('work');
  assert.equal(p.transfer.objects, added, `sent ${p.transfer.objects}, the Commit added ${added}`);
  assert.ok(p.transfer.bytes < 8192, `${p.transfer.bytes} bytes`);
  // Far fewer ids asked about than the state holds: shared subtrees are skipped unopened.
  assert.ok(p.transfer.asked < before / 4, `asked about ${p.transfer.asked} ids`);
  // The remote head is held here: the negotiation ran locally, with no presence query.
  assert.equal(p.transfer.queries, 0);
  a.close();
});

test('pushes whose page trees grow and shrink a level: the local negotiation sends all that is missing', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  a.forkBranch({ name: 'work', layer: 'demo' });
  await a.push('work');
  const ws = await a.createWorkspace('work', { at: join(dir, 'ws'), projection: 'materialize' });
  mkdirSync(join(ws.path, 'many'));
  for (let i = 0; i < 1500; i++) writeFileSync(join(ws.path, 'many', `file-with-a-longer-name-${i}.txt`), `body ${i}\n`);
  assert.equal((await a.commitWorkspace(ws.id)).outcome, 'Created');
  assert.equal((await a.push('work')).outcome, 'Pushed');
  for (let i = 0; i < 1500; i++) if (i % 300 !== 0) rmSync(join(ws.path, 'many', `file-with-a-longer-name-${i}.txt`));
  writeFileSync(join(ws.path, 'many', 'new.txt'), 'new\n');
  assert.equal((await a.commitWorkspace(ws.id)).outcome, 'Created');
  await a.endWorkspace(ws.id);
  assert.equal((await a.push('work')).outcome, 'Pushed');
  assert.equal((await a.remoteVerify()).ok, true);
  const b = (await Client.clone(url, join(dir, 'b.sqlite'))).client;
  assert.deepEqual(exported(b, 'work', join(dir, 'eb')), exported(a, 'work', join(dir, 'ea')));
  assert.equal(b.verify().ok, true);
  b.close();
  a.close();
});

test('a forged or damaged object on the remote is refused on fetch; nothing becomes reachable', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  await a.push('demo');
  const db = new URL(url).pathname.slice(1);
  // Flip bytes inside every pack row: every frame then fails to decode or to match its id.
  pg.psql(`UPDATE layerfs.packs SET data = overlay(data PLACING '\\xdeadbeefdeadbeef'::bytea FROM greatest(1, length(data) / 2) FOR 8)`, db);
  const rv = await a.remoteVerify();
  assert.equal(rv.ok, false);
  assert.match(rv.damage!.message, /damaged|does not match|missing/);
  const path = join(dir, 'b.sqlite');
  await assert.rejects(Client.clone(url, path), (e: unknown) => isLayerFsError(e, 'ERR_CORRUPT'));
  const b = Client.connect(path);
  assert.deepEqual(b.layerStacks(), []);
  assert.deepEqual(b.remoteRefs(), []);
  assertIntact(b);
  b.close();
  a.close();
});

test('forged history: a Layer row whose id does not follow from its contents is refused', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  await a.push('demo');
  const db = new URL(url).pathname.slice(1);
  pg.psql(`UPDATE layerfs.layers SET created_ms = created_ms + 1, root_id = (SELECT root_id FROM layerfs.layers LIMIT 1)`, db);
  pg.psql(`UPDATE layerfs.layers SET parent_layer_id = NULL, seq = 0, root_id = decode(repeat('ab', 32), 'hex')`, db);
  const path = join(dir, 'b.sqlite');
  await assert.rejects(Client.clone(url, path), (e: unknown) => isLayerFsError(e, 'ERR_CORRUPT'));
  a.close();
});

test('an interrupted push resumes: whole batches stay, nothing half-sent is reachable, the retry sends the rest', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  let batches = 0;
  await assert.rejects(
    a.push('demo', {
      batchBytes: 8 * 1024,
      onBatch: () => {
        if (++batches === 3) throw new Error('connection lost');
      },
    }),
    /connection lost/,
  );
  const db = new URL(url).pathname.slice(1);
  assert.equal(pg.psql(`SELECT count(*) FROM layerfs.layer_stacks`, db).trim(), '0');
  const landed = Number(pg.psql(`SELECT count(*) FROM layerfs.objects`, db).trim());
  assert.ok(landed > 0);
  const p = await a.push('demo', { batchBytes: 8 * 1024 });
  assert.equal(p.outcome, 'Pushed');
  assert.equal(p.transfer.objects + landed, a.info().objects);
  const { client: b } = await Client.clone(url, join(dir, 'b.sqlite'));
  assert.deepEqual(exported(b, 'demo', join(dir, 'xb')), exported(a, 'demo', join(dir, 'xa')));
  assertIntact(b);
  b.close();
  a.close();
});

test('a push SIGKILLed mid-transfer leaves nothing reachable on the remote; the next push sends the rest', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  a.close();
  const worker = fileURLToPath(new URL('./slow-push-worker.ts', import.meta.url));
  const child = spawn(process.execPath, nodeArgs(worker, join(dir, 'a.sqlite'), 'demo'), { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const killed = await new Promise<boolean>((resolve) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (/batch 3\n/.test(out)) child.kill('SIGKILL');
    });
    child.on('exit', (_code, signal) => resolve(signal === 'SIGKILL'));
  });
  assert.ok(killed, `the push finished before it could be killed: ${out}`);
  const db = new URL(url).pathname.slice(1);
  assert.equal(pg.psql('SELECT count(*) FROM layerfs.layer_stacks', db).trim(), '0');
  const landed = Number(pg.psql('SELECT count(*) FROM layerfs.objects', db).trim());
  assert.ok(landed > 0);
  const again = Client.connect(join(dir, 'a.sqlite'));
  const p = await again.push('demo');
  assert.equal(p.transfer.objects + landed, again.info().objects);
  const { client: b } = await Client.clone(url, join(dir, 'b.sqlite'));
  assert.deepEqual(exported(b, 'demo', join(dir, 'xb')), exported(again, 'demo', join(dir, 'xa')));
  assertIntact(b);
  assertIntact(again);
  b.close();
  again.close();
});

test('an interrupted fetch resumes and the retry completes the clone', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  await a.push('demo');
  const path = join(dir, 'b.sqlite');
  let batches = 0;
  await assert.rejects(
    Client.clone(url, path, {
      batchBytes: 8 * 1024,
      onBatch: () => {
        if (++batches === 2) throw new Error('connection lost');
      },
    }),
    /connection lost/,
  );
  const b = Client.connect(path);
  assert.deepEqual(b.layerStacks(), []);
  assertIntact(b);
  const r = await b.fetch();
  assert.ok(r.transfer.objects < a.info().objects);
  assert.deepEqual(exported(b, 'demo', join(dir, 'xb')), exported(a, 'demo', join(dir, 'xa')));
  assertIntact(b);
  b.close();
  a.close();
  assertStoreIntact(path);
});

test('refs: a LayerStack of that name with another id is refused; a stale --strict push is ERR_HEAD_MOVED and overwrites nothing', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  await a.push('demo');
  const other = Client.create(join(dir, 'o.sqlite'));
  await other.initLayerStack({ name: 'demo' });
  other.remoteAdd('origin', url);
  await assert.rejects(other.push('demo'), (e: unknown) => isLayerFsError(e, 'ERR_REMOTE_MISMATCH'));
  other.close();

  a.forkBranch({ name: 'w', layer: 'demo' });
  await a.push('w');
  const { client: b } = await Client.clone(url, join(dir, 'b.sqlite'));
  await commitFiles(a, 'w', join(dir, 'wa'), { 'a.txt': 'a' });
  await commitFiles(b, 'w', join(dir, 'wb'), { 'b.txt': 'b' });
  await a.push('w');
  await assert.rejects(b.push('w', { strict: true }), (e: unknown) => isLayerFsError(e, 'ERR_HEAD_MOVED'));
  await b.fetch();
  assert.equal(b.remoteRefs().find((r) => r.ref === 'origin/w')?.head, a.branch('w').headCommitId);
  assert.equal(b.cat('origin/w', 'a.txt').toString(), 'a');
  a.close();
  b.close();
});

test('a stale Branch push reconciles: local Commits are replayed onto the remote head, messages kept; overlapping changes are Conflicted and move nothing', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  a.forkBranch({ name: 'w', layer: 'demo' });
  await a.push('w');
  const { client: b } = await Client.clone(url, join(dir, 'b.sqlite'));
  const f1 = a.cat('demo', 'deep/f1.txt').toString();
  await commitFiles(a, 'w', join(dir, 'wa'), { 'a.txt': 'a', 'deep/f1.txt': 'top\n' + f1 });
  await commitFiles(b, 'w', join(dir, 'wb1'), { 'b.txt': 'b' }, { message: 'first of b' });
  await commitFiles(b, 'w', join(dir, 'wb2'), { 'deep/f1.txt': f1 + 'bottom\n' }, { message: 'second of b', metadata: { tool: 'edit' } });
  await a.push('w');
  const aHead = a.branch('w').headCommitId;
  const p = await b.push('w');
  assert.equal(p.outcome, 'Pushed', JSON.stringify(p.conflicts));
  assert.equal(p.reconciled?.attempts, 1);
  assert.equal(p.reconciled?.replayed, 2);
  assert.deepEqual(p.reconciled?.merged, ['deep/f1.txt']);
  // b's Branch now continues a's: a's Commit, then b's two replayed with their notes.
  const log = b.log('w');
  assert.deepEqual(log.map((c) => c.message).slice(0, 2), ['second of b', 'first of b']);
  assert.equal(log[2]!.id, aHead);
  assert.equal(b.cat('w', 'deep/f1.txt').toString(), 'top\n' + f1 + 'bottom\n');
  await a.fetch();
  for (const f of ['a.txt', 'b.txt']) assert.ok(a.cat('origin/w', f).length === 1);
  assert.equal(a.cat('origin/w', 'deep/f1.txt').toString(), b.cat('w', 'deep/f1.txt').toString());
  assertIntact(b);

  // Both change the same lines: Conflicted, naming the path; neither side moves.
  await commitFiles(a, 'w', join(dir, 'wa2'), { 'a.txt': 'from a' });
  await a.push('w');
  const remoteHead = a.branch('w').headCommitId;
  await commitFiles(b, 'w', join(dir, 'wb3'), { 'a.txt': 'from b' });
  const bHead = b.branch('w').headCommitId;
  const c = await b.push('w');
  assert.equal(c.outcome, 'Conflicted');
  assert.deepEqual(c.conflicts?.map((x) => x.path), ['a.txt']);
  assert.equal(c.conflicts?.[0]?.commit, bHead);
  assert.equal(c.head, remoteHead);
  assert.equal(b.branch('w').headCommitId, bHead);
  await a.fetch();
  assert.equal(a.remoteRefs().find((r) => r.ref === 'origin/w')?.head, remoteHead);
  assert.equal(a.cat('origin/w', 'a.txt').toString(), 'from a');
  assert.equal((await a.remoteVerify()).ok, true);
  assertIntact(a);
  assertIntact(b);
  a.close();
  b.close();
});

test('a damaged local object is refused before it leaves: the remote never holds it', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  const big = a.stat('demo', 'deep/er/big.bin');
  a.close();
  // The large file's first chunk: find it through the Store and damage its stored bytes.
  const s = Store.open(join(dir, 'a.sqlite'));
  const chunk = s.db.prepare('SELECT id, codec FROM objects WHERE kind = 2 LIMIT 1').get() as { id: Buffer; codec: number };
  s.close();
  damageStored(join(dir, 'a.sqlite'), chunk.id, chunk.codec, 0x55);
  const again = Client.connect(join(dir, 'a.sqlite'));
  await assert.rejects(again.push('demo'), (e: unknown) => isLayerFsError(e, 'ERR_CORRUPT'));
  const db = new URL(url).pathname.slice(1);
  assert.equal(pg.psql(`SELECT count(*) FROM layerfs.objects WHERE id = '\\x${chunk.id.toString('hex')}'`, db).trim(), '0');
  assert.equal(pg.psql(`SELECT count(*) FROM layerfs.layer_stacks`, db).trim(), '0');
  assert.ok(big.size > 0);
  again.close();
});

test('a Branch that only shares the name is ERR_REMOTE_MISMATCH; diverged LayerStacks are HeadMoved on push and Diverged on fetch', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const a = await seeded(dir, url);
  a.forkBranch({ name: 'v', layer: 'demo' });
  await a.push('v');
  const { client: b } = await Client.clone(url, join(dir, 'b.sqlite'));
  const { client: c } = await Client.clone(url, join(dir, 'c.sqlite'));
  // A third Store fetches the LayerStack (and the remote's v), drops its copy of v and forks a
  // Branch of its own under the same name: same LayerStack, same name, another id.
  const d = Client.create(join(dir, 'd.sqlite'));
  d.remoteAdd('origin', url);
  await d.fetch();
  d.close();
  const raw = Store.open(join(dir, 'd.sqlite'));
  raw.db.prepare('DELETE FROM branches WHERE name = ?').run('v');
  raw.close();
  const d2 = Client.connect(join(dir, 'd.sqlite'));
  d2.forkBranch({ name: 'v', layer: 'demo' });
  await assert.rejects(d2.push('v'), (e: unknown) => isLayerFsError(e, 'ERR_REMOTE_MISMATCH'));
  d2.close();

  // Two Stores each Add a Layer: the second push of the LayerStack is HeadMoved; its fetch
  // reports the remote LayerStack Diverged and takes nothing of it.
  for (const [s, f] of [[b, 'b.txt'], [c, 'c.txt']] as const) {
    s.forkBranch({ name: `add-${f}`, layer: 'demo' });
    await commitFiles(s, `add-${f}`, join(dir, `ws-${f}`), { [f]: f });
    assert.equal(s.add(`add-${f}`).outcome, 'Added');
  }
  await b.push('demo');
  await assert.rejects(c.push('demo'), (e: unknown) => isLayerFsError(e, 'ERR_HEAD_MOVED'));
  const r = await c.fetch();
  assert.equal(r.refs.find((x) => x.kind === 'layerstack')?.outcome, 'Diverged');
  assert.equal(c.ls('demo').some((e) => e.name === 'c.txt'), true);
  assertIntact(c);
  // The first Store, behind, fast-forwards its LayerStack.
  const fa = await a.fetch();
  assert.equal(fa.refs.find((x) => x.kind === 'layerstack')?.outcome, 'FastForward');
  assert.equal(a.cat('demo', 'b.txt').toString(), 'b.txt');
  assertIntact(a);
  for (const x of [a, b, c]) x.close();
});

test('a delta whose base stays behind travels whole; its receiver reads it', async () => {
  const dir = tempDir();
  const url = await freshRemote();
  const v1 = Buffer.from('line of a file that changes a little\n'.repeat(80));
  const v2 = Buffer.concat([v1, Buffer.from('one more line\n')]);
  mkdirSync(join(dir, 's1'));
  writeFileSync(join(dir, 's1', 'f.txt'), v1);
  const a = Client.create(join(dir, 'a.sqlite'));
  await a.initLayerStack({ name: 'demo', source: join(dir, 's1') });
  a.forkBranch({ name: 'w', layer: 'demo' });
  await commitFiles(a, 'w', join(dir, 'ws'), { 'f.txt': v2 });
  // Another LayerStack imports v2: the import reuses the stored object, a delta against v1,
  // which only demo reaches.
  mkdirSync(join(dir, 's2'));
  writeFileSync(join(dir, 's2', 'g.txt'), v2);
  await a.initLayerStack({ name: 'other', source: join(dir, 's2') });
  a.remoteAdd('origin', url);
  await a.remoteInit();
  const p = await a.push('other');
  assert.equal(p.transfer.whole, 1);
  assert.equal((await a.remoteVerify()).ok, true);
  const { client: b } = await Client.clone(url, join(dir, 'b.sqlite'));
  assert.ok(b.cat('other', 'g.txt').equals(v2));
  assertIntact(b);
  // demo follows: the base arrives, and the remote still reads both.
  await a.push('demo');
  assert.equal((await a.remoteVerify()).ok, true);
  a.close();
  b.close();
});
