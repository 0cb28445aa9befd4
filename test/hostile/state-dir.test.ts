// Hostile input against `<store>.d` and Workspace rows (issue: hostile input and shared
// machines, items 3, 5, 12, 13). A Store sits where others can write, or is handed over with
// rows naming directories it never created: nothing outside its own files is followed, appended
// to, created or removed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, LayerFsError } from '../../lib/sdk/index.js';
import { ensureDaemon } from '../../lib/fuse/client.js';
import { Store } from '../../lib/store/index.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

async function setup() {
  const dir = tempDir('layerfs-hostile-');
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  writeFileSync(join(src, 'a.txt'), 'a\n');
  writeFileSync(join(src, 'd/b.txt'), 'b\n');
  const storePath = join(dir, 'store.sqlite');
  const client = Client.create(storePath);
  const init = await client.initLayerStack({ name: 'proj', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  return { dir, src, storePath, client };
}

function isUnsafe(e: unknown): boolean {
  return e instanceof LayerFsError && e.code === 'ERR_UNSAFE_PATH';
}

test('receipts.jsonl planted as a symlink in <store>.d is never followed', async () => {
  const { dir, storePath, client } = await setup();
  try {
    const target = join(dir, 'target');
    writeFileSync(target, 'precious\n');
    const journal = `${storePath}.d/receipts.jsonl`;
    if (existsSync(journal)) renameSync(journal, `${journal}.old`);
    symlinkSync(target, journal);
    client.forkBranch({ name: 'b2', layer: client.branch('main').baseLayerId });
    client.log('main');
    assert.equal(readFileSync(target, 'utf8'), 'precious\n', 'the symlink target was appended to');
    assert.ok(lstatSync(journal).isSymbolicLink());
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('daemon.log planted as a symlink, or a <store>.d others can write, refuses to start the daemon (ERR_UNSAFE_PATH) and creates nothing', async () => {
  const { dir, storePath, client } = await setup();
  client.close();
  const created = join(dir, 'created');
  symlinkSync(created, `${storePath}.d/daemon.log`);
  await assert.rejects(ensureDaemon(storePath, { startTimeoutMs: 2000 }), isUnsafe);
  assert.equal(existsSync(created), false, 'the daemon log followed a planted symlink');

  // A Store in a world-writable directory whose `.d` someone else made writable for all.
  const s2 = join(dir, 'other.sqlite');
  Client.create(s2).close();
  mkdirSync(`${s2}.d`, { mode: 0o777 });
  chmodSync(`${s2}.d`, 0o777);
  await assert.rejects(ensureDaemon(s2, { startTimeoutMs: 2000 }), isUnsafe);
  assert.deepEqual(readdirSync(`${s2}.d`), []);

  // A `.d` that is a symlink to somewhere else.
  const s3 = join(dir, 'third.sqlite');
  Client.create(s3).close();
  mkdirSync(join(dir, 'elsewhere'));
  symlinkSync(join(dir, 'elsewhere'), `${s3}.d`);
  await assert.rejects(ensureDaemon(s3, { startTimeoutMs: 2000 }), isUnsafe);
  assert.deepEqual(readdirSync(join(dir, 'elsewhere')), []);
});

test('a Store opened through a symlink is the same Store: one <store>.d, one path', async () => {
  const { dir, storePath, client } = await setup();
  client.close();
  const alias = join(dir, 'alias.sqlite');
  symlinkSync(storePath, alias);
  const s = Store.open(alias);
  try {
    assert.equal(s.path, storePath);
  } finally {
    s.close();
  }
  const c = Client.connect(alias);
  assert.equal(c.storePath, storePath);
  c.close();
});

test('--store /proc/self/mem is ERR_NOT_A_STORE, not an I/O error', () => {
  assert.throws(() => Client.connect('/proc/self/mem'), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_NOT_A_STORE');
});

test('workspace end --discard removes only a directory the Workspace created: a forged row naming another directory, or a directory swapped in since, is left alone', async () => {
  const { dir, storePath, client } = await setup();
  try {
    // A row that points at somebody's directory (as a forged or handed-over Store would have).
    const victim = join(dir, 'victim');
    mkdirSync(join(victim, 'sub'), { recursive: true });
    writeFileSync(join(victim, 'sub/keep.txt'), 'mine\n');
    const ws = await client.createWorkspace('main', { at: join(dir, 'ws') });
    const forged = Buffer.alloc(16, 7);
    const s = Store.open(storePath);
    try {
      s.db.prepare('INSERT INTO workspaces (id, branch_id, path, projection, base_root_id, expected_head_id, expected_base_id, state, created_ms) SELECT ?, branch_id, ?, projection, base_root_id, expected_head_id, expected_base_id, state, created_ms FROM workspaces WHERE path = ?').run(forged, victim, join(dir, 'ws'));
    } finally {
      s.close();
    }
    const r = await client.endWorkspace(forged.toString('hex'), { discard: true });
    assert.equal(r.outcome, 'Ended');
    assert.equal(r.outcome === 'Ended' && r.kept, victim);
    assert.equal(readFileSync(join(victim, 'sub/keep.txt'), 'utf8'), 'mine\n', 'the victim directory was removed');

    // The Workspace's own directory, replaced by another one at the same path.
    renameSync(join(dir, 'ws'), join(dir, 'ws-moved'));
    mkdirSync(join(dir, 'ws'));
    writeFileSync(join(dir, 'ws/other.txt'), 'other\n');
    const r2 = await client.endWorkspace(ws.id, { discard: true });
    assert.equal(r2.outcome === 'Ended' && r2.kept, join(dir, 'ws'));
    assert.equal(readFileSync(join(dir, 'ws/other.txt'), 'utf8'), 'other\n');

    // An ordinary Workspace is removed as before.
    const ws3 = await client.createWorkspace('main', { at: join(dir, 'ws3') });
    const r3 = await client.endWorkspace(ws3.id, { discard: true });
    assert.equal(r3.outcome === 'Ended' && r3.kept, undefined);
    assert.equal(existsSync(join(dir, 'ws3')), false);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('a 2,000-deep tree: a Workspace of it is created, committed and ended (iterative removal)', async () => {
  const dir = tempDir('layerfs-hostile-');
  const src = join(dir, 'src');
  let p = src;
  for (let i = 0; i < 2000; i++) p = join(p, 'd');
  mkdirSync(p, { recursive: true });
  writeFileSync(join(p, 'leaf.txt'), 'deep\n');
  const client = Client.create(join(dir, 'store.sqlite'));
  try {
    const init = await client.initLayerStack({ name: 'proj', source: src });
    client.forkBranch({ name: 'main', layer: init.layer.id });
    const at = join(dir, 'w');
    const ws = await client.createWorkspace('main', { at });
    writeFileSync(join(at, 'top.txt'), 'top\n');
    assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
    const r = await client.endWorkspace(ws.id, { discard: true });
    assert.equal(r.outcome, 'Ended');
    assert.equal(existsSync(at), false);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('execution records are refused in a <store>.d another user could write', async () => {
  const { dir, storePath, client } = await setup();
  try {
    const ws = await client.createWorkspace('main', { at: join(dir, 'ws') });
    chmodSync(`${storePath}.d`, 0o777);
    await assert.rejects(client.exec(ws.id, ['true']), isUnsafe);
    chmodSync(`${storePath}.d`, 0o700);
    assert.equal((await client.exec(ws.id, ['true'])).exitCode, 0);
    assert.equal((await client.endWorkspace(ws.id)).outcome, 'Ended');
  } finally {
    client.close();
  }
});

test("root never takes over another user's <store>.d: the daemon refuses at once (ERR_UNSAFE_PATH), ownership unchanged", { skip: process.getuid?.() !== 0 ? 'needs root' : false }, async () => {
  const { storePath, client } = await setup();
  client.close();
  const { chownSync } = await import('node:fs');
  chownSync(`${storePath}.d`, 65534, 65534);
  const t0 = Date.now();
  await assert.rejects(ensureDaemon(storePath, { startTimeoutMs: 2000 }), isUnsafe);
  assert.ok(Date.now() - t0 < 1500);
  assert.equal(lstatSync(`${storePath}.d`).uid, 65534);
  assert.equal(existsSync(`${storePath}.d/daemon.log`), false);
});

test('a Store file with a second hard link is refused by the daemon at once (ERR_UNSAFE_PATH): two names would be two daemons', async () => {
  const { dir, storePath, client } = await setup();
  client.close();
  const { linkSync } = await import('node:fs');
  linkSync(storePath, join(dir, 'second.sqlite'));
  const t0 = Date.now();
  await assert.rejects(ensureDaemon(join(dir, 'second.sqlite'), { startTimeoutMs: 2000 }), isUnsafe);
  await assert.rejects(ensureDaemon(storePath, { startTimeoutMs: 2000 }), isUnsafe);
  assert.ok(Date.now() - t0 < 1500);
});
