// Commit notes (format 4): message, metadata and author are stored with each Commit, covered by
// its id, returned by log (also filtered by path), through both projections and the CLI; a
// format-3 Store is upgraded and its Commits keep their ids.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { commitId, commitIdV2, canonicalJson, normalizeNote } from '../../lib/history/index.js';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { FORMAT_VERSION } from '../../lib/store/index.js';
import { cli } from '../helpers/cli.js';
import { asFormat } from '../helpers/formats.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { fuseAvailable, detachStale } from '../../lib/fuse/index.js';

async function setup() {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib'), { recursive: true });
  writeFileSync(join(src, 'README'), 'readme\n');
  writeFileSync(join(src, 'lib/a.txt'), 'a\n');
  const store = join(dir, 'store.sqlite');
  const client = Client.create(store);
  const init = await client.initLayerStack({ name: 'proj', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  return { dir, store, client };
}

test('the id covers message, metadata (whatever its key order), author and time', () => {
  const root = Buffer.alloc(32, 1);
  const base = Buffer.alloc(32, 2);
  const a = commitIdV2(root, null, base, 1000, 'me', 'fix', canonicalJson({ a: 1, b: [1, { d: 2, c: 3 }] }));
  assert.ok(a.equals(commitIdV2(root, null, base, 1000, 'me', 'fix', canonicalJson({ b: [1, { c: 3, d: 2 }], a: 1 }))));
  for (const other of [
    commitIdV2(root, null, base, 1000, 'me', 'fix!', canonicalJson({ a: 1, b: [1, { d: 2, c: 3 }] })),
    commitIdV2(root, null, base, 1001, 'me', 'fix', canonicalJson({ a: 1, b: [1, { d: 2, c: 3 }] })),
    commitIdV2(root, null, base, 1000, 'you', 'fix', canonicalJson({ a: 1, b: [1, { d: 2, c: 3 }] })),
    commitIdV2(root, null, base, 1000, 'me', 'fix', ''),
    // Length prefixes: moving bytes between fields changes the id.
    commitIdV2(root, null, base, 1000, 'mef', 'ix', canonicalJson({ a: 1, b: [1, { d: 2, c: 3 }] })),
    commitId(root, null, base),
  ]) {
    assert.ok(!a.equals(other));
  }
});

test('bad notes are ERR_INVALID_ARGUMENT naming the field', () => {
  const bad: [unknown, string][] = [
    [{ message: 'a\0b' }, 'message'],
    [{ message: 'x'.repeat(64 * 1024 + 1) }, 'message'],
    [{ metadata: [1, 2] }, 'metadata'],
    [{ metadata: { n: Number.NaN } }, 'metadata'],
    [{ metadata: { big: 'y'.repeat(70_000) } }, 'metadata'],
    [{ author: 7 }, 'author'],
  ];
  for (const [input, field] of bad) {
    assert.throws(
      () => normalizeNote(input as never, 'me'),
      (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT') && (e as unknown as { details: { field: string } }).details.field === field,
      JSON.stringify(input).slice(0, 60),
    );
  }
  assert.deepEqual(normalizeNote(undefined, 'me'), { message: '', metadata: null, author: 'me' });
});

test('materialized: commit with a note; log returns it, newest first; log -- PATH filters; the CLI shows one line each', async () => {
  const { dir, store, client } = await setup();
  try {
    const at = join(dir, 'ws');
    const ws = await client.createWorkspace('main', { at, projection: 'materialize' });
    writeFileSync(join(at, 'lib/a.txt'), 'a2\n');
    const c1 = await client.commitWorkspace(ws.id, { message: 'edit a\n\nlonger body', metadata: { tool: 'bash', callId: 'c17', n: 2 }, author: 'agent-1' });
    assert.equal(c1.outcome, 'Created');
    writeFileSync(join(at, 'README'), 'readme 2\n');
    process.env.LAYERFS_AUTHOR = 'env-author';
    const c2 = await client.commitWorkspace(ws.id, { message: 'edit readme' }).finally(() => delete process.env.LAYERFS_AUTHOR);
    assert.equal(c2.outcome, 'Created');
    if (c1.outcome !== 'Created' || c2.outcome !== 'Created') return;
    assert.equal(c1.commit.message, 'edit a\n\nlonger body');
    assert.deepEqual(c1.commit.metadata, { callId: 'c17', n: 2, tool: 'bash' });
    assert.equal(c1.commit.author, 'agent-1');
    assert.equal(c2.commit.author, 'env-author');
    const log = client.log('main');
    assert.deepEqual(log, [c2.commit, c1.commit]);
    assert.deepEqual(client.log('main', { path: 'lib' }).map((c) => c.id), [c1.commit.id]);
    assert.deepEqual(client.log('main', { path: 'lib/a.txt' }).map((c) => c.id), [c1.commit.id]);
    assert.deepEqual(client.log('main', { path: 'README' }).map((c) => c.id), [c2.commit.id]);
    assert.deepEqual(client.log('main', { path: 'nothing/here' }), []);
    await client.endWorkspace(ws.id);
    assertIntact(client);
    client.close();

    const text = cli(['--store', store, 'log', 'main']);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stdout, `${c2.commit.id.slice(0, 12)} edit readme\n${c1.commit.id.slice(0, 12)} edit a\n`);
    const byPath = cli(['--store', store, 'log', 'main', '--', 'lib']);
    assert.equal(byPath.stdout, `${c1.commit.id.slice(0, 12)} edit a\n`);
    const json = cli(['--store', store, '--json', 'log', 'main']);
    assert.deepEqual(json.json.commits[1].metadata, { callId: 'c17', n: 2, tool: 'bash' });
  } finally {
    client.close();
  }
});

test('CLI: workspace commit -m --metadata --author; bad --metadata is a typed usage error and commits nothing', async () => {
  const { dir, store, client } = await setup();
  const at = join(dir, 'ws');
  const ws = await client.createWorkspace('main', { at, projection: 'materialize' });
  client.close();
  writeFileSync(join(at, 'new.txt'), 'new\n');
  const bad = cli(['--store', store, '--json', 'workspace', 'commit', ws.id, '--metadata', '[1]']);
  assert.notEqual(bad.code, 0);
  assert.equal(bad.json.error.code, 'ERR_INVALID_ARGUMENT');
  const good = cli(['--store', store, '--json', 'workspace', 'commit', ws.id, '-m', 'add new.txt', '--metadata', '{"model":"m1"}', '--author', 'cli-user']);
  assert.equal(good.code, 0, good.stderr);
  assert.equal(good.json.commit.message, 'add new.txt');
  assert.deepEqual(good.json.commit.metadata, { model: 'm1' });
  assert.equal(good.json.commit.author, 'cli-user');
  const c = Client.connect(store);
  try {
    assert.equal(c.log('main').length, 1);
    await c.endWorkspace(ws.id);
    assertIntact(c);
  } finally {
    c.close();
  }
});

test('a format-3 Store is upgraded: its Commits keep their ids and an empty note; new Commits get notes', async () => {
  const { dir, store, client } = await setup();
  const at = join(dir, 'ws');
  const ws = await client.createWorkspace('main', { at, projection: 'materialize' });
  writeFileSync(join(at, 'new.txt'), 'new\n');
  const c1 = await client.commitWorkspace(ws.id);
  assert.equal(c1.outcome, 'Created');
  client.close();
  // Rewrite that Commit as a format-3 writer made it: a v1 id over root, parent and base only.
  const db = new Database(store);
  const row = db.prepare('SELECT id, root_id AS rootId, base_layer_id AS baseLayerId FROM commits').get() as { id: Buffer; rootId: Buffer; baseLayerId: Buffer };
  const v1 = commitId(row.rootId, null, row.baseLayerId);
  db.pragma('foreign_keys = OFF');
  db.prepare('UPDATE commits SET id = ? WHERE id = ?').run(v1, row.id);
  db.prepare('UPDATE branches SET head_commit_id = ?').run(v1);
  db.prepare('UPDATE workspaces SET expected_head_id = ?').run(v1);
  asFormat(db, 3);
  db.close();

  // Read as is (no upgrade) through TEMP shims: every query of the current format answers.
  const ro = Client.connect(store, { readonly: true });
  try {
    assert.equal(ro.info().formatVersion, 3);
    assert.deepEqual(ro.log('main').map((x) => [x.id, x.message]), [[v1.toString('hex'), '']]);
    assert.deepEqual(ro.workspaces().map((w) => w.id), [ws.id]);
    assert.equal(ro.verify().ok, true);
  } finally {
    ro.close();
  }
  const c = Client.connect(store);
  try {
    assert.equal(c.info().formatVersion, FORMAT_VERSION);
    const [old] = c.log('main');
    assert.equal(old!.id, v1.toString('hex'));
    assert.equal(old!.message, '');
    assert.equal(old!.metadata, null);
    writeFileSync(join(at, 'two.txt'), 'two\n');
    const c2 = await c.commitWorkspace(ws.id, { message: 'after upgrade' });
    assert.equal(c2.outcome, 'Created');
    assert.deepEqual(c.log('main').map((x) => x.message), ['after upgrade', '']);
    await c.endWorkspace(ws.id);
    assertIntact(c);
  } finally {
    c.close();
  }
});

const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

test('FUSE: the daemon records the note; the reply is the stored row', { skip: fuseSkip, timeout: 120_000 }, async () => {
  const { dir, store, client } = await setup();
  const at = join(dir, 'ws');
  try {
    const ws = await client.createWorkspace('main', { at, projection: 'fuse' });
    writeFileSync(join(at, 'lib/a.txt'), 'through the mount\n');
    const r = await client.commitWorkspace(ws.id, { message: 'mounted edit', metadata: { callId: 'f1' }, author: 'fuse-agent' });
    assert.equal(r.outcome, 'Created');
    if (r.outcome !== 'Created') return;
    assert.equal(r.commit.message, 'mounted edit');
    assert.deepEqual(client.log('main')[0], r.commit);
    await client.endWorkspace(ws.id);
  } finally {
    await client.stopDaemon({ discard: true }).catch(() => {});
    await detachStale(at).catch(() => false);
    client.close();
  }
  assertStoreIntact(store);
});
