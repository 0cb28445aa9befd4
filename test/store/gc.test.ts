/**
 * Deleting Branches and LayerStacks, pins, retention and `db gc`: what gc frees, what it keeps,
 * and that every kept state still exports exactly afterwards.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { FORMAT_VERSION, Store } from '../../lib/store/index.js';
import { addHold, keptStates, releaseHold, uuidv7 } from '../../lib/history/index.js';
import { workspaceRoots } from '../../lib/workspace/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { walkForCompare } from '../helpers/treewalk.js';
import { cli } from '../helpers/cli.js';
import { asFormat } from '../helpers/formats.js';

function source(dir: string): string {
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  for (let i = 0; i < 20; i++) writeFileSync(join(src, 'd', `t${i}.txt`), `line ${i}\n`.repeat(50 + i));
  writeFileSync(join(src, 'big.bin'), seededBytes(1, 300_000));
  return src;
}

/** Commits `n` rounds on `branch` through a Workspace at `ws`; each adds unique random content. */
async function commits(c: Client, branch: string, ws: string, n: number, seed: number): Promise<string[]> {
  await c.createWorkspace(branch, { at: ws });
  const ids: string[] = [];
  for (let r = 0; r < n; r++) {
    writeFileSync(join(ws, `new-${r}.bin`), seededBytes(seed * 100 + r, 40_000));
    const p = join(ws, 'd', 't1.txt');
    writeFileSync(p, readFileSync(p, 'utf8') + `edit ${seed} ${r}\n`);
    const res = await c.commitWorkspace(ws);
    assert.equal(res.outcome, 'Created');
    if (res.outcome === 'Created') ids.push(res.commit.id);
  }
  const end = await c.endWorkspace(ws);
  assert.equal(end.outcome, 'Ended');
  return ids;
}

function exported(c: Client, ref: string, dir: string): ReturnType<typeof walkForCompare> {
  const target = join(dir, `x-${Math.random().toString(16).slice(2)}`);
  c.export(ref, target);
  return walkForCompare(target);
}

test('branch delete refuses open Workspaces, --force ends clean ones, Dirty unless --discard; log says deleted with when; rename; layerstack delete', async () => {
  const dir = tempDir();
  const c = Client.create(join(dir, 's.sqlite'));
  try {
    const init = await c.initLayerStack({ name: 'demo', source: source(dir) });
    c.forkBranch({ name: 'try-a', layer: init.layer.id });
    c.forkBranch({ name: 'try-b', layer: init.layer.id });
    const ws = join(dir, 'ws-b');
    await c.createWorkspace('try-b', { at: ws });
    await assert.rejects(c.deleteBranch('try-b'), (e: unknown) => isLayerFsError(e, 'ERR_BUSY') && /Workspaces/.test(e.message));
    writeFileSync(join(ws, 'dirty.txt'), 'x');
    const dirty = await c.deleteBranch('try-b', { force: true });
    assert.equal(dirty.outcome, 'Dirty');
    assert.equal(c.branch('try-b').name, 'try-b');
    await assert.rejects(c.deleteBranch('try-b', { discard: true }), (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT'));
    const del = await c.deleteBranch('try-b', { force: true, discard: true });
    assert.equal(del.outcome, 'Deleted');
    assert.equal(del.outcome === 'Deleted' && del.workspacesEnded.length, 1);
    assert.throws(() => c.log('try-b'), (e: unknown) => isLayerFsError(e, 'ERR_DELETED') && e.details.deletedAt === (del.outcome === 'Deleted' ? del.deletedAt : '') && /was deleted at/.test(e.message));
    assert.throws(() => c.ls('try-b'), (e: unknown) => isLayerFsError(e, 'ERR_DELETED'));
    assert.deepEqual(c.deleted().map((d) => [d.kind, d.name]), [['branch', 'try-b']]);
    // The name is free again.
    c.forkBranch({ name: 'try-b', layer: 'demo' });
    assert.equal(c.log('try-b').length, 0);

    const ren = c.renameBranch('try-a', 'keep');
    assert.equal(ren.previousName, 'try-a');
    assert.equal(c.branch('keep').id, ren.branch.id);
    assert.throws(() => c.renameBranch('keep', 'try-b'), (e: unknown) => isLayerFsError(e, 'ERR_NAME_TAKEN'));
    assert.throws(() => c.renameBranch('keep', 'bad/name'), (e: unknown) => isLayerFsError(e, 'ERR_INVALID_NAME'));

    await commits(c, 'keep', join(dir, 'ws-k'), 2, 3);
    await c.createWorkspace('keep', { at: join(dir, 'ws-k2') });
    assert.throws(() => c.deleteLayerStack('demo'), (e: unknown) => isLayerFsError(e, 'ERR_BUSY'));
    await c.endWorkspace(join(dir, 'ws-k2'));
    const sd = c.deleteLayerStack('demo');
    assert.deepEqual(sd.branches.sort(), ['keep', 'try-b']);
    assert.equal(sd.commits, 2);
    assert.deepEqual(c.layerStacks(), []);
    assert.throws(() => c.layers({ layerStack: 'demo' }), (e: unknown) => isLayerFsError(e, 'ERR_DELETED'));
    assert.throws(() => c.log('keep'), (e: unknown) => isLayerFsError(e, 'ERR_DELETED'));
    const ops = c.monitorSnapshot().operations.map((o) => o.operation);
    for (const op of ['branch.delete', 'branch.rename', 'layerstack.delete']) assert.ok(ops.includes(op), op);
    const g = await c.gc();
    assert.equal(g.liveObjects, 0);
    assert.equal(g.objects, g.deletedObjects);
    assertIntact(c);
  } finally {
    c.close();
  }
});

test('gc frees what only a deleted Branch reached; dry run changes nothing; kept states export exactly; a second gc finds nothing', async () => {
  const dir = tempDir();
  const path = join(dir, 's.sqlite');
  const c = Client.create(path);
  try {
    const init = await c.initLayerStack({ name: 'demo', source: source(dir) });
    c.forkBranch({ name: 'keep', layer: init.layer.id });
    c.forkBranch({ name: 'drop', layer: init.layer.id });
    await commits(c, 'keep', join(dir, 'w1'), 3, 1);
    const dropped = await commits(c, 'drop', join(dir, 'w2'), 3, 2);
    const before = new Map(['demo', 'keep', ...c.log('keep').map((x) => x.id)].map((r) => [r, exported(c, r, dir)]));
    const objects0 = c.info().objects;
    await c.deleteBranch('drop');
    const epoch = () => {
      const s = Store.open(path, { readonly: true });
      try {
        return s.gcEpoch();
      } finally {
        s.close();
      }
    };
    assert.equal(epoch(), 0);
    const dry = await c.gc({ dryRun: true });
    assert.equal(dry.outcome, 'DryRun');
    // A dry run deletes nothing, so content stored unpublished before it stays trusted (gc-epoch.ts).
    assert.equal(epoch(), 0);
    assert.ok(dry.garbageObjects >= 3 * 2, `${dry.garbageObjects}`);
    assert.ok(dry.storedBytesFreed >= 3 * 40_000, `${dry.storedBytesFreed}`);
    assert.equal(c.info().objects, objects0);
    const r = await c.gc({ batchObjects: 2 });
    assert.equal(r.outcome, 'Collected');
    assert.equal(r.deletedObjects, dry.garbageObjects);
    assert.ok(r.transactions >= 3);
    // Every sweep transaction advanced the gc epoch before it deleted anything.
    assert.ok(epoch() >= 3, `gc epoch ${epoch()} after ${r.transactions} transactions`);
    const afterFirst = epoch();
    assert.equal(c.info().objects, objects0 - r.deletedObjects);
    for (const [ref, tree] of before) assert.deepEqual(exported(c, ref, dir), tree, ref);
    // Nothing keeps the deleted Branch's Commits: their rows go too (gc-commits.test.ts).
    assert.equal(r.commitsRemoved, 3);
    for (const id of dropped) assert.throws(() => c.ls(id), (e: unknown) => isLayerFsError(e, 'ERR_NOT_FOUND'));
    assert.throws(() => c.log('drop'), (e: unknown) => isLayerFsError(e, 'ERR_DELETED'));
    assertIntact(c);
    // Free pages are reused: a new Commit of ~40 kB needs no new page of the file.
    assert.ok(r.freeBytes > 100_000, `${r.freeBytes}`);
    const pages = () => {
      const s = Store.open(path, { readonly: true });
      try {
        return (s.db.pragma('page_count', { simple: true }) as number) - (s.db.pragma('freelist_count', { simple: true }) as number);
      } finally {
        s.close();
      }
    };
    const used = pages();
    const size = (s: Store) => s.db.pragma('page_count', { simple: true }) as number;
    const probe = Store.open(path, { readonly: true });
    const total0 = size(probe);
    probe.close();
    await commits(c, 'keep', join(dir, 'w3'), 1, 7);
    const probe2 = Store.open(path, { readonly: true });
    assert.equal(size(probe2), total0);
    probe2.close();
    assert.ok(pages() > used);
    const again = await c.gc({ vacuum: true });
    assert.equal(again.garbageObjects, 0);
    assert.ok(epoch() > afterFirst);
    assert.equal(again.freeBytes, 0);
    assert.ok(again.fileBytesAfter <= again.fileBytesBefore);
    assertIntact(c);
  } finally {
    c.close();
  }
});

test('retention keeps the newest N Commits, fork bases and pins; log marks pruned ones; gc reclaims the rest', async () => {
  const dir = tempDir();
  const c = Client.create(join(dir, 's.sqlite'));
  try {
    const init = await c.initLayerStack({ name: 'demo', source: source(dir) });
    c.forkBranch({ name: 'main', layer: init.layer.id });
    const ids = (await commits(c, 'main', join(dir, 'w'), 6, 4)).reverse(); // newest first
    c.forkBranch({ name: 'side', branch: 'main', commit: ids[4]! });
    assert.equal(c.pin(ids[3]!).outcome, 'Pinned');
    assert.equal(c.pin(ids[3]!).outcome, 'AlreadyPinned');
    assert.equal(c.pin('demo').state, `layer:${init.layer.id}`);
    assert.equal(c.unpin('demo').outcome, 'Unpinned');
    assert.equal(c.unpin('demo').outcome, 'NotPinned');
    assert.deepEqual(c.retention(), { branchCommits: null, olderThanMs: null });
    assert.ok(c.log('main').every((x) => !x.pruned));
    assert.throws(() => c.setRetention({ branchCommits: 0 }), (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT'));
    // Young Commits stay under an age rule, whatever the count.
    c.setRetention({ branchCommits: 2, olderThanMs: 3_600_000 });
    assert.ok(c.log('main').every((x) => !x.pruned));
    c.setRetention({ olderThanMs: 0 });
    const log = c.log('main');
    // ids[5] is within `side`'s newest 2 (its head is ids[4]): each Branch's history counts.
    assert.deepEqual(log.map((x) => x.pruned), [false, false, true, true, false, false]);
    assert.deepEqual(c.commits().filter((x) => x.pruned).map((x) => x.id).sort(), [ids[2]!, ids[3]!].sort());
    // ids[3] is pinned: kept as a state although log shows it pruned by the policy.
    const pinned = exported(c, ids[3]!, dir);
    const fork = exported(c, ids[4]!, dir);
    await c.gc();
    assert.deepEqual(exported(c, ids[3]!, dir), pinned);
    assert.deepEqual(exported(c, ids[4]!, dir), fork);
    assert.throws(() => c.ls(ids[2]!), (e: unknown) => isLayerFsError(e, 'ERR_PRUNED'));
    assert.throws(() => c.pin(ids[2]!), (e: unknown) => isLayerFsError(e, 'ERR_PRUNED'));
    assert.equal(c.ls(ids[5]!).length > 0, true);
    assert.equal(c.cat('main', 'd/t1.txt').toString().includes('edit 4 5'), true);
    assert.deepEqual(c.pins().map((p) => p.state), [`commit:${ids[3]}`]);
    assertIntact(c);
  } finally {
    c.close();
  }
});

test('a format-7 Store is upgraded in place to the current format and gc runs on it', async () => {
  const dir = tempDir();
  const path = join(dir, 's.sqlite');
  const c = Client.create(path);
  await c.initLayerStack({ name: 'demo', source: source(dir) });
  c.forkBranch({ name: 'b', layer: 'demo' });
  c.close();
  const db = new Database(path);
  asFormat(db, 7);
  db.close();
  const ro = Store.open(path, { readonly: true });
  assert.equal(ro.info.formatVersion, 7);
  ro.close();
  const c2 = Client.connect(path);
  try {
    assert.equal(c2.info().formatVersion, FORMAT_VERSION);
    await c2.deleteBranch('b');
    const r = await c2.gc();
    assert.equal(r.garbageObjects, 0);
    assertIntact(c2);
  } finally {
    c2.close();
  }
});

test('CLI: branch delete/rename, layerstack delete, pin, retention, log marks pruned, db gc --dry-run --json', async () => {
  const dir = tempDir();
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  const init = await c.initLayerStack({ name: 'demo', source: source(dir) });
  c.forkBranch({ name: 'a', layer: init.layer.id });
  await commits(c, 'a', join(dir, 'w'), 3, 5);
  c.forkBranch({ name: 'b', layer: init.layer.id });
  c.close();
  const s = ['--store', store];
  assert.equal(cli([...s, 'branch', 'rename', 'a', 'keep']).code, 0);
  const del = cli([...s, '--json', 'branch', 'delete', 'b']);
  assert.equal(del.code, 0, del.stderr);
  assert.equal(del.json.outcome, 'Deleted');
  const log = cli([...s, 'log', 'b']);
  assert.equal(log.code, 1);
  assert.match(log.stderr, /Branch b .* was deleted at \d{4}-/);
  assert.match(cli([...s, 'query', 'deleted']).stdout, /branch\tb\t/);
  assert.equal(cli([...s, 'retention', 'set', '--branch-commits', '1', '--older-than', '0s']).code, 0);
  assert.match(cli([...s, 'retention', 'show']).stdout, /branch-commits 1, older-than 0ms|branch-commits 1, older-than -/);
  assert.equal(cli([...s, 'retention', 'set', '--older-than', 'soon']).code, 1);
  const lines = cli([...s, 'log', 'keep']).stdout.trim().split('\n');
  assert.deepEqual(lines.map((l) => l.endsWith(' (pruned)')), [false, true, true]);
  const pinned = lines[2]!.split(' ')[0]!;
  assert.match(cli([...s, 'pin', pinned]).stdout, /pinned commit:/);
  assert.match(cli([...s, 'query', 'pins']).stdout, new RegExp(`commit:${pinned}`));
  const dry = cli([...s, '--json', 'db', 'gc', '--dry-run']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(dry.json.outcome, 'DryRun');
  assert.ok(dry.json.garbageObjects > 0);
  const gc = cli([...s, 'db', 'gc', '--vacuum']);
  assert.equal(gc.code, 0, gc.stderr);
  assert.match(gc.stdout, /deleted \d+ of \d+ objects/);
  assert.match(cli([...s, 'ls', pinned]).stdout, /big\.bin/);
  assert.equal(cli([...s, 'layerstack', 'delete', 'demo']).code, 0);
  assert.equal(cli([...s, 'verify']).code, 0);
});

test('a hold (the registry of operations spanning transactions) keeps what it reaches until released', async () => {
  const dir = tempDir();
  const path = join(dir, 's.sqlite');
  const c = Client.create(path);
  try {
    await c.initLayerStack({ name: 'demo', source: source(dir) });
    c.forkBranch({ name: 'tmp', layer: 'demo' });
    const [id] = await commits(c, 'tmp', join(dir, 'w'), 1, 9);
    const tree = exported(c, id!, dir);
    await c.deleteBranch('tmp');
    const s = Store.open(path);
    const hold = uuidv7();
    const root = s.db.prepare('SELECT root_id FROM commits WHERE id = ?').pluck().get(Buffer.from(id!, 'hex')) as Buffer;
    addHold(s, hold, root, 'test');
    assert.equal((await s.gc({ roots: () => keptStates(s, workspaceRoots(s)) })).deletedObjects, 0);
    s.close();
    assert.deepEqual(exported(c, id!, dir), tree);
    const s2 = Store.open(path);
    releaseHold(s2, hold);
    s2.close();
    assert.ok((await c.gc()).deletedObjects > 0);
    // The deleted Branch's Commit row went with its state: nothing keeps it.
    assert.throws(() => c.ls(id!), (e: unknown) => isLayerFsError(e, 'ERR_NOT_FOUND'));
    assertIntact(c);
  } finally {
    c.close();
  }
});
