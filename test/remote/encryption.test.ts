/**
 * Client-side encryption of a remote (a real PostgreSQL cluster): frames are sealed with a key
 * the remote never sees, so the remote's packs hold none of the files' bytes; push, clone,
 * fetch and remote verify work with the key; a missing or wrong key, or a key for a plain
 * remote, is ERR_REMOTE_KEY; a damaged sealed frame is ERR_CORRUPT; the remote schema upgrades
 * from version 1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { REMOTE_SCHEMA_VERSION } from '../../lib/remote/index.js';
import { clusterForFile } from '../helpers/postgres-file.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { commitFiles, exported, writeTree } from './fixture.js';

const cluster = clusterForFile('e');
const freshRemote = () => cluster.freshRemote();

const code = (c: string) => (e: unknown) => isLayerFsError(e, c as never);

/** Whether any pack row of the remote holds `sample` as is. */
function packsHold(db: string, sample: Buffer): boolean {
  return cluster.pg.psql(`SELECT count(*) FROM layerfs.packs WHERE position('\\x${sample.toString('hex')}'::bytea in data) > 0`, db).trim() !== '0';
}

test('an encrypted remote: the packs hold none of the bytes; push, clone, verify and a reconciling push work with the key', async () => {
  const dir = tempDir();
  writeTree(dir);
  const big = readFileSync(join(dir, 'src', 'deep', 'er', 'big.bin'));
  const sample = big.subarray(300_000, 300_064);
  const keyFile = join(dir, 'key');
  writeFileSync(keyFile, randomBytes(32).toString('hex') + '\n', { mode: 0o600 });

  // The same Store pushed to a plain remote and to an encrypted one.
  const plain = freshRemote();
  const sealed = freshRemote();
  const a = Client.create(join(dir, 'a.sqlite'));
  await a.initLayerStack({ name: 'demo', source: join(dir, 'src') });
  a.forkBranch({ name: 'w', layer: 'demo' });
  await commitFiles(a, 'w', join(dir, 'ws1'), { 'note.txt': 'secret note\n' });
  a.remoteAdd('plain', plain.url);
  a.remoteAdd('origin', sealed.url);
  await a.remoteInit('plain');
  assert.deepEqual(await a.remoteInit('origin', { keyFile }), { remote: 'origin', from: null, to: REMOTE_SCHEMA_VERSION });
  for (const r of ['plain', 'origin']) {
    const opts = r === 'origin' ? { remote: r, keyFile } : { remote: r };
    assert.equal((await a.push('demo', opts)).outcome, 'Pushed');
    assert.equal((await a.push('w', opts)).outcome, 'Pushed');
  }
  assert.equal(packsHold(plain.db, sample), true);
  assert.equal(packsHold(sealed.db, sample), false);
  assert.equal(cluster.pg.psql(`SELECT value FROM layerfs.meta WHERE key = 'encryption'`, sealed.db).trim(), 'aes-256-gcm');
  assert.equal(cluster.pg.psql(`SELECT count(*) FROM layerfs.meta WHERE value LIKE '%${readFileSync(keyFile, 'utf8').trim()}%'`, sealed.db).trim(), '0');

  // The key, through the environment variable of the remote's name.
  process.env.LAYERFS_REMOTE_KEY_FILE_ORIGIN = keyFile;
  try {
    const { client: b } = await Client.clone(sealed.url, join(dir, 'b.sqlite'));
    assert.deepEqual(exported(b, 'w', join(dir, 'xb')), exported(a, 'w', join(dir, 'xa')));
    assertIntact(b);
    assert.equal((await b.remoteVerify()).ok, true);
    // Both sides commit; the stale push reconciles through the encrypted remote.
    await commitFiles(a, 'w', join(dir, 'ws2'), { 'a.txt': 'a' });
    await commitFiles(b, 'w', join(dir, 'ws3'), { 'b.txt': 'b' });
    await a.push('w');
    const p = await b.push('w');
    assert.equal(p.outcome, 'Pushed');
    assert.equal(p.reconciled?.attempts, 1);
    await a.fetch();
    assert.equal(a.cat('origin/w', 'b.txt').toString(), 'b');
    assert.equal((await a.remoteVerify()).ok, true);
    assertIntact(a);
    b.close();
  } finally {
    delete process.env.LAYERFS_REMOTE_KEY_FILE_ORIGIN;
  }
  a.close();
});

test('a missing or wrong key, or a key for a plain remote, is ERR_REMOTE_KEY; a damaged sealed frame is ERR_CORRUPT', async () => {
  const dir = tempDir();
  writeTree(dir, 10);
  const keyFile = join(dir, 'key');
  const wrongFile = join(dir, 'wrong');
  writeFileSync(keyFile, randomBytes(32));
  writeFileSync(wrongFile, randomBytes(32).toString('base64'));
  const sealed = freshRemote();
  const plain = freshRemote();
  const a = Client.create(join(dir, 'a.sqlite'));
  await a.initLayerStack({ name: 'demo', source: join(dir, 'src') });
  a.remoteAdd('origin', sealed.url);
  a.remoteAdd('plain', plain.url);
  await a.remoteInit('origin', { keyFile });
  await a.remoteInit('plain');
  await a.push('demo', { remote: 'plain' });

  await assert.rejects(a.push('demo'), code('ERR_REMOTE_KEY'));
  await assert.rejects(a.push('demo', { keyFile: wrongFile }), code('ERR_REMOTE_KEY'));
  await assert.rejects(a.push('demo', { remote: 'plain', keyFile }), code('ERR_REMOTE_KEY'));
  await assert.rejects(a.push('demo', { keyFile: join(dir, 'nope') }), code('ERR_NOT_FOUND'));
  writeFileSync(join(dir, 'short'), 'abc');
  await assert.rejects(a.push('demo', { keyFile: join(dir, 'short') }), code('ERR_INVALID_ARGUMENT'));
  // A plain remote that holds objects does not become encrypted.
  await assert.rejects(a.remoteInit('plain', { keyFile }), code('ERR_REMOTE_KEY'));
  assert.equal(cluster.pg.psql(`SELECT value FROM layerfs.meta WHERE key = 'encryption'`, plain.db).trim(), 'none');
  assert.equal(cluster.pg.psql('SELECT count(*) FROM layerfs.layer_stacks', sealed.db).trim(), '0');

  await a.push('demo', { keyFile });
  await assert.rejects(Client.clone(sealed.url, join(dir, 'nokey.sqlite')), code('ERR_REMOTE_KEY'));
  await assert.rejects(Client.clone(sealed.url, join(dir, 'wrong.sqlite'), { keyFile: wrongFile }), code('ERR_REMOTE_KEY'));
  // One byte of one sealed frame flipped: the tag does not match; nothing becomes reachable.
  cluster.pg.psql(`UPDATE layerfs.packs SET data = set_byte(data, 20, get_byte(data, 20) # 1) WHERE id = (SELECT min(id) FROM layerfs.packs)`, sealed.db);
  const b = Client.create(join(dir, 'b.sqlite'));
  b.remoteAdd('origin', sealed.url);
  await assert.rejects(b.fetch(undefined, { keyFile }), code('ERR_CORRUPT'));
  assert.equal(b.remoteRefs().length, 0);
  const v = await b.remoteVerify(undefined, { keyFile });
  assert.equal(v.ok, false);
  assertIntact(b);
  b.close();
  a.close();
});

test('a version-1 remote is refused until remote init upgrades it (frames stay in the clear)', async () => {
  const dir = tempDir();
  writeTree(dir, 10);
  const r = freshRemote();
  const a = Client.create(join(dir, 'a.sqlite'));
  await a.initLayerStack({ name: 'demo', source: join(dir, 'src') });
  a.remoteAdd('origin', r.url);
  await a.remoteInit();
  await a.push('demo');
  // What version 1 held: no encryption row.
  cluster.pg.psql(`DELETE FROM layerfs.meta WHERE key = 'encryption'; UPDATE layerfs.meta SET value = '1' WHERE key = 'schema_version'`, r.db);
  await assert.rejects(a.fetch(), code('ERR_REMOTE_SCHEMA'));
  assert.deepEqual(await a.remoteInit(), { remote: 'origin', from: 1, to: REMOTE_SCHEMA_VERSION });
  assert.equal(cluster.pg.psql(`SELECT value FROM layerfs.meta WHERE key = 'encryption'`, r.db).trim(), 'none');
  const { client: b } = await Client.clone(r.url, join(dir, 'b.sqlite'));
  assert.deepEqual(exported(b, 'demo', join(dir, 'xb')), exported(a, 'demo', join(dir, 'xa')));
  b.close();
  a.close();
});
