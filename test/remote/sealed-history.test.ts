/**
 * Sealed history on an encrypted remote (a real PostgreSQL cluster): LayerStack and Branch
 * names, Commit messages, authors, metadata and every time are sealed with the remote's key;
 * the server's rows keep ids, the head graph, HMACs of names and zeros. Clone, fetch of one
 * LayerStack by name, incremental and reconciling pushes work; a sealed field moved to another
 * row or removed is ERR_CORRUPT; `remote init` with the key seals the clear rows of an
 * encrypted version-2 remote.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { REMOTE_SCHEMA_VERSION } from '../../lib/remote/index.js';
import { clusterForFile } from '../helpers/postgres-file.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { commitFiles, exported, writeTree } from './fixture.js';

const cluster = clusterForFile('h');
const freshRemote = () => cluster.freshRemote();

const code = (c: string) => (e: unknown) => isLayerFsError(e, c as never);
const TABLES = ['layer_stacks', 'layers', 'commits', 'branches'];

/** Every history row of the remote as the server holds it, as text (bytea in hex). */
function rowsText(db: string): string {
  return TABLES.map((t) => cluster.pg.psql(`SELECT t::text FROM layerfs.${t} t`, db)).join('\n');
}

/** A Store with LayerStack `stack`, Branch `branch` and two Commits carrying free text. */
async function storeWithSecrets(dir: string, stack: string, branch: string): Promise<Client> {
  writeTree(join(dir, 'tree'), 8);
  const a = Client.create(join(dir, 'a.sqlite'));
  await a.initLayerStack({ name: stack, source: join(dir, 'tree', 'src') });
  a.forkBranch({ name: branch, layer: stack });
  await commitFiles(a, branch, join(dir, 'ws1'), { 'x.txt': 'x\n' }, { message: 'confidential message one', metadata: { ticket: 'CONFIDENTIAL-TICKET' } });
  await commitFiles(a, branch, join(dir, 'ws2'), { 'y.txt': 'y\n' }, { message: 'confidential message two' });
  return a;
}

function keyFileIn(dir: string): string {
  const keyFile = join(dir, 'key');
  writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
  return keyFile;
}

test('an encrypted remote holds no names, messages, authors, metadata or times; clone, fetch by name and pushes work with the key', async () => {
  const dir = tempDir();
  const keyFile = keyFileIn(dir);
  const r = freshRemote();
  const a = await storeWithSecrets(dir, 'confidential-stack', 'confidential-branch');
  a.remoteAdd('origin', r.url);
  await a.remoteInit('origin', { keyFile });
  await a.push('confidential-stack', { keyFile });
  await a.push('confidential-branch', { keyFile });
  const text = rowsText(r.db);
  assert.doesNotMatch(text, /confidential|CONFIDENTIAL/i);
  for (const t of TABLES) {
    assert.equal(cluster.pg.psql(`SELECT count(*) FROM layerfs.${t} WHERE created_ms <> 0 OR sealed IS NULL`, r.db).trim(), '0', t);
  }
  assert.equal(cluster.pg.psql(`SELECT count(*) FROM layerfs.commits WHERE message <> '' OR author <> '' OR metadata IS NOT NULL`, r.db).trim(), '0');

  const { client: b } = await Client.clone(r.url, join(dir, 'b.sqlite'), { keyFile });
  assert.deepEqual(exported(b, 'confidential-branch', join(dir, 'xb')), exported(a, 'confidential-branch', join(dir, 'xa')));
  const log = (c: Client) => c.log('confidential-branch').map((x) => [x.id, x.message, x.author, JSON.stringify(x.metadata), x.createdAt]);
  assert.deepEqual(log(b), log(a));
  assert.deepEqual(b.remoteRefs().map((x) => x.ref).sort(), ['origin/confidential-branch', 'origin/confidential-stack']);
  assertIntact(b);

  // Lookups by name go through the names' HMACs: fetch of one LayerStack, incremental and reconciling pushes.
  const c = Client.create(join(dir, 'c.sqlite'));
  c.remoteAdd('origin', r.url);
  const f = await c.fetch('origin', { keyFile, layerStack: 'confidential-stack' });
  assert.deepEqual(f.refs.map((x) => x.name).sort(), ['confidential-branch', 'confidential-stack']);
  await assert.rejects(c.fetch('origin', { keyFile, layerStack: 'no-such-stack' }), code('ERR_NOT_FOUND'));
  c.close();
  await commitFiles(a, 'confidential-branch', join(dir, 'ws3'), { 'a.txt': 'a' }, { message: 'confidential from a' });
  await commitFiles(b, 'confidential-branch', join(dir, 'ws4'), { 'b.txt': 'b' }, { message: 'confidential from b' });
  await a.push('confidential-branch', { keyFile });
  const p = await b.push('confidential-branch', { keyFile });
  assert.equal(p.outcome, 'Pushed');
  assert.equal(p.reconciled?.attempts, 1);
  await a.fetch('origin', { keyFile });
  assert.equal(a.cat('origin/confidential-branch', 'b.txt').toString(), 'b');
  const { client: d } = await Client.clone(r.url, join(dir, 'd.sqlite'), { keyFile });
  assert.deepEqual(d.log('confidential-branch').map((x) => x.message).slice(0, 2), ['confidential from b', 'confidential from a']);
  d.close();
  assert.doesNotMatch(rowsText(r.db), /confidential|CONFIDENTIAL/i);
  assert.equal((await a.remoteVerify('origin', { keyFile })).ok, true);
  assertIntact(a);
  b.close();
  a.close();
});

test('a sealed field moved to another row, or removed, is ERR_CORRUPT; nothing of the remote is kept', async () => {
  const dir = tempDir();
  const keyFile = keyFileIn(dir);
  const r = freshRemote();
  const a = await storeWithSecrets(dir, 'demo', 'w');
  a.remoteAdd('origin', r.url);
  await a.remoteInit('origin', { keyFile });
  await a.push('w', { keyFile });
  const fetchFails = async (n: number) => {
    const b = Client.create(join(dir, `b${n}.sqlite`));
    b.remoteAdd('origin', r.url);
    await assert.rejects(b.fetch('origin', { keyFile }), code('ERR_CORRUPT'));
    assert.equal(b.remoteRefs().length, 0);
    assert.equal(b.layerStacks().length, 0);
    assertIntact(b);
    b.close();
  };
  // The two Commits' sealed fields swapped: each opens only for its own row.
  cluster.pg.psql(`UPDATE layerfs.commits c SET sealed = o.sealed FROM layerfs.commits o WHERE o.id <> c.id`, r.db);
  await fetchFails(1);
  cluster.pg.psql(`UPDATE layerfs.commits SET sealed = NULL`, r.db);
  await fetchFails(2);
  a.close();
});

test('remote init with the key seals the clear history rows of an encrypted version-2 remote', async () => {
  const dir = tempDir();
  const keyFile = keyFileIn(dir);
  const r = freshRemote();
  const a = await storeWithSecrets(dir, 'demo', 'confidential-branch');
  a.remoteAdd('origin', r.url);
  await a.remoteInit('origin', { keyFile });
  await a.push('confidential-branch', { keyFile });
  // What version 2 held: the same frames (sealed), the history rows in the clear, no sealed column.
  const local = new Database(join(dir, 'a.sqlite'), { readonly: true });
  const sql: string[] = [];
  const hex = (b: Buffer) => `'\\x${b.toString('hex')}'`;
  const lit = (s: string | null) => (s === null ? 'NULL' : `'${s.replace(/'/g, "''")}'`);
  for (const s of local.prepare('SELECT id, name, created_ms AS t FROM layer_stacks').all() as { id: Buffer; name: string; t: number }[]) sql.push(`UPDATE layerfs.layer_stacks SET name = ${lit(s.name)}, created_ms = ${s.t} WHERE id = ${hex(s.id)}`);
  for (const l of local.prepare('SELECT id, created_ms AS t FROM layers').all() as { id: Buffer; t: number }[]) sql.push(`UPDATE layerfs.layers SET created_ms = ${l.t} WHERE id = ${hex(l.id)}`);
  for (const b of local.prepare('SELECT id, name, created_ms AS t FROM branches').all() as { id: Buffer; name: string; t: number }[]) sql.push(`UPDATE layerfs.branches SET name = ${lit(b.name)}, created_ms = ${b.t} WHERE id = ${hex(b.id)}`);
  for (const c of local.prepare('SELECT id, message, author, metadata, created_ms AS t FROM commits').all() as { id: Buffer; message: string; author: string; metadata: string | null; t: number }[]) {
    sql.push(`UPDATE layerfs.commits SET message = ${lit(c.message)}, author = ${lit(c.author)}, metadata = ${lit(c.metadata)}, created_ms = ${c.t} WHERE id = ${hex(c.id)}`);
  }
  local.close();
  for (const t of TABLES) sql.push(`ALTER TABLE layerfs.${t} DROP COLUMN sealed`);
  sql.push(`UPDATE layerfs.meta SET value = '2' WHERE key = 'schema_version'`);
  cluster.pg.psql(sql.join(';\n'), r.db);
  assert.match(rowsText(r.db), /confidential/);

  await assert.rejects(a.fetch('origin', { keyFile }), code('ERR_REMOTE_SCHEMA'));
  // Upgrading an encrypted remote needs its key (it seals what it finds).
  await assert.rejects(a.remoteInit('origin'), code('ERR_REMOTE_KEY'));
  assert.equal(cluster.pg.psql(`SELECT value FROM layerfs.meta WHERE key = 'schema_version'`, r.db).trim(), '2');
  assert.deepEqual(await a.remoteInit('origin', { keyFile }), { remote: 'origin', from: 2, to: REMOTE_SCHEMA_VERSION });
  assert.doesNotMatch(rowsText(r.db), /confidential/);
  const { client: b } = await Client.clone(r.url, join(dir, 'b.sqlite'), { keyFile });
  assert.deepEqual(b.log('confidential-branch').map((x) => [x.id, x.message]), a.log('confidential-branch').map((x) => [x.id, x.message]));
  assertIntact(b);
  b.close();
  a.close();
});
