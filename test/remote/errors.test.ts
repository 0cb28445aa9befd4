/**
 * What can go wrong with a remote, each a typed error that changes nothing: SCRAM passwords
 * (right, wrong, missing, from ~/.pgpass; never stored), an unreachable server, a schema of
 * another version, a full disk on the remote and on the local side. And the CLI round.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { FORMAT_VERSION } from '../../lib/store/index.js';
import { REMOTE_SCHEMA_VERSION } from '../../lib/remote/index.js';
import { cli } from '../helpers/cli.js';
import { startCluster, type PgCluster } from '../helpers/postgres.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { commitFiles, writeTree } from './fixture.js';
import { asFormat } from '../helpers/formats.js';

const PASSWORD = 'correct horse';
let pg: PgCluster;
before(async () => {
  pg = await startCluster({ password: PASSWORD });
});
after(() => pg?.stop());

const code = (c: string) => (e: unknown) => isLayerFsError(e, c as never);

async function storeWithDemo(dir: string): Promise<Client> {
  writeTree(dir, 10);
  const c = Client.create(join(dir, 'a.sqlite'));
  await c.initLayerStack({ name: 'demo', source: join(dir, 'src') });
  return c;
}

function setEnv(env: Record<string, string | undefined>): void {
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}

function withEnv<T>(env: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const old = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  setEnv(env);
  return fn().finally(() => setEnv(old));
}

test('SCRAM over TCP: wrong or missing password is ERR_REMOTE_AUTH; PGPASSWORD and ~/.pgpass work; no password is stored', async () => {
  const dir = tempDir();
  const a = await storeWithDemo(dir);
  assert.throws(() => a.remoteAdd('bad', `postgres://layerfs:${encodeURIComponent(PASSWORD)}@127.0.0.1:${pg.port}/postgres`), code('ERR_INVALID_ARGUMENT'));
  a.remoteAdd('origin', pg.tcpUrl!);
  const nofile = { PGPASSFILE: join(dir, 'none') };
  await withEnv({ ...nofile, PGPASSWORD: 'wrong' }, () => assert.rejects(a.remoteInit(), code('ERR_REMOTE_AUTH')));
  await withEnv({ ...nofile, PGPASSWORD: undefined }, () => assert.rejects(a.remoteInit(), code('ERR_REMOTE_AUTH')));
  await withEnv({ ...nofile, PGPASSWORD: PASSWORD }, async () => {
    await a.remoteInit();
    assert.equal((await a.push('demo')).outcome, 'Pushed');
  });
  const passfile = join(dir, 'pgpass');
  writeFileSync(passfile, `127.0.0.1:${pg.port}:*:layerfs:${PASSWORD.replace(/:/g, '\\:')}\n`, { mode: 0o600 });
  await withEnv({ PGPASSFILE: passfile, PGPASSWORD: undefined }, async () => {
    // A clone URL may carry the password: it is used once, never stored.
    const url = `postgres://layerfs:${encodeURIComponent(PASSWORD)}@127.0.0.1:${pg.port}/postgres`;
    const { client: b } = await Client.clone(url, join(dir, 'b.sqlite'));
    assert.equal(b.remotes()[0]!.url.includes('horse'), false);
    assert.equal((await b.fetch()).transfer.objects, 0);
    // "env:" takes host, port, user and database from the PG* variables, as psql does.
    b.remoteAdd('fromenv', 'env:');
    await withEnv({ PGHOST: '127.0.0.1', PGPORT: String(pg.port), PGUSER: 'layerfs', PGDATABASE: 'postgres', PGPASSWORD: PASSWORD }, async () => {
      assert.equal((await b.fetch('fromenv')).transfer.objects, 0);
    });
    b.close();
  });
  a.close();
  const bytes = readFileSync(join(dir, 'b.sqlite'));
  assert.equal(bytes.includes(Buffer.from('horse')), false);
});

test('an unreachable server and a missing database are ERR_REMOTE_UNREACHABLE', async () => {
  const dir = tempDir();
  const a = await storeWithDemo(dir);
  a.remoteAdd('gone', 'postgres://layerfs@127.0.0.1:1/postgres');
  a.remoteAdd('nosock', `postgres://layerfs@localhost/postgres?host=${encodeURIComponent(join(dir, 'nowhere'))}&port=5432`);
  a.remoteAdd('nodb', `postgres://layerfs@127.0.0.1:${pg.port}/nosuchdb`);
  await assert.rejects(a.push('demo', { remote: 'gone' }), code('ERR_REMOTE_UNREACHABLE'));
  await assert.rejects(a.fetch('nosock'), code('ERR_REMOTE_UNREACHABLE'));
  await withEnv({ PGPASSWORD: PASSWORD }, () => assert.rejects(a.fetch('nodb'), code('ERR_REMOTE_UNREACHABLE')));
  assert.deepEqual(a.remoteRefs(), []);
  a.close();
});

test('a remote without the schema, or with another version of it, is ERR_REMOTE_SCHEMA until remote init', async () => {
  const dir = tempDir();
  const a = await storeWithDemo(dir);
  pg.psql('CREATE DATABASE schemas');
  a.remoteAdd('origin', `postgres://layerfs@127.0.0.1:${pg.port}/schemas`);
  await withEnv({ PGPASSWORD: PASSWORD }, async () => {
    await assert.rejects(a.push('demo'), code('ERR_REMOTE_SCHEMA'));
    assert.deepEqual(await a.remoteInit(), { remote: 'origin', from: null, to: REMOTE_SCHEMA_VERSION });
    assert.deepEqual(await a.remoteInit(), { remote: 'origin', from: REMOTE_SCHEMA_VERSION, to: REMOTE_SCHEMA_VERSION });
    pg.psql(`UPDATE layerfs.meta SET value = '99' WHERE key = 'schema_version'`, 'schemas');
    await assert.rejects(a.push('demo'), (e: unknown) => isLayerFsError(e, 'ERR_REMOTE_SCHEMA') && /version 99/.test(e.message));
    await assert.rejects(a.remoteInit(), code('ERR_REMOTE_SCHEMA'));
  });
  a.close();
});

test('a full disk on the remote is ERR_NO_SPACE and publishes nothing; locally a clone into a full disk is ERR_NO_SPACE', async () => {
  const dir = tempDir();
  // Inside the cluster's directory: the server's uid must reach it.
  const tiny = join(pg.dir, 'tiny');
  mkdirSync(tiny);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=3m,uid=65534,gid=65534,mode=0700', 'tmpfs', tiny]);
  try {
    pg.psql(`CREATE TABLESPACE tiny LOCATION '${tiny}'`);
    pg.psql('CREATE DATABASE fulldb TABLESPACE tiny');
    mkdirSync(join(dir, 'src'));
    for (let i = 0; i < 20; i++) writeFileSync(join(dir, 'src', `r${i}.bin`), seededBytes(i + 1, 256 * 1024));
    const a = Client.create(join(dir, 'a.sqlite'));
    await a.initLayerStack({ name: 'big', source: join(dir, 'src') });
    a.remoteAdd('origin', `postgres://layerfs@127.0.0.1:${pg.port}/fulldb`);
    await withEnv({ PGPASSWORD: PASSWORD }, async () => {
      await a.remoteInit();
      await assert.rejects(a.push('big'), code('ERR_NO_SPACE'));
      assert.equal(pg.psql('SELECT count(*) FROM layerfs.layer_stacks', 'fulldb').trim(), '0');
    });
    a.close();
  } finally {
    try {
      pg.psql('DROP DATABASE IF EXISTS fulldb');
      pg.psql('DROP TABLESPACE IF EXISTS tiny');
    } finally {
      execFileSync('umount', [tiny]);
    }
  }

  // Locally: a remote holding 5 MiB of random content cloned onto a 2 MiB file system.
  const src = join(dir, 'src2');
  mkdirSync(src);
  for (let i = 0; i < 20; i++) writeFileSync(join(src, `r${i}.bin`), seededBytes(100 + i, 256 * 1024));
  const a = Client.create(join(dir, 'b.sqlite'));
  await a.initLayerStack({ name: 'big', source: src });
  pg.psql('CREATE DATABASE clonefull');
  const url = `postgres://layerfs@127.0.0.1:${pg.port}/clonefull`;
  a.remoteAdd('origin', url);
  const small = join(dir, 'small');
  mkdirSync(small);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', small]);
  try {
    await withEnv({ PGPASSWORD: PASSWORD }, async () => {
      await a.remoteInit();
      await a.push('big');
      await assert.rejects(Client.clone(url, join(small, 'c.sqlite')), code('ERR_NO_SPACE'));
    });
    const c = Client.connect(join(small, 'c.sqlite'), { readonly: true });
    assert.deepEqual(c.layerStacks(), []);
    assertIntact(c);
    c.close();
  } finally {
    execFileSync('umount', [small]);
  }
  a.close();
});

test('a format-5 Store is upgraded in place: remotes and remote_refs appear, nothing else changes', async () => {
  const dir = tempDir();
  const a = await storeWithDemo(dir);
  const before = a.ls('demo').map((e) => e.name);
  a.close();
  const db = new Database(join(dir, 'a.sqlite'));
  asFormat(db, 5);
  db.close();
  const ro = Client.connect(join(dir, 'a.sqlite'), { readonly: true });
  assert.equal(ro.info().formatVersion, 5);
  assert.deepEqual(ro.ls('demo').map((e) => e.name), before);
  ro.close();
  const rw = Client.connect(join(dir, 'a.sqlite'));
  assert.equal(rw.info().formatVersion, FORMAT_VERSION);
  assert.deepEqual(rw.remotes(), []);
  rw.remoteAdd('origin', 'env:');
  assert.equal(rw.remotes()[0]!.url, 'PG* environment');
  rw.close();
  assertStoreIntact(join(dir, 'a.sqlite'));
});

test('CLI: remote add/ls/init/refs/remove, push, clone, fetch, fork from origin/NAME, a stale push reconciles, --strict HeadMoved exits 3', async () => {
  const dir = tempDir();
  writeTree(dir, 10);
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json'), PGPASSWORD: PASSWORD };
  const store = join(dir, 'a.sqlite');
  const ok = (args: string[], e: Record<string, string> = env) => {
    const r = cli(['--json', ...args], e);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return r.json;
  };
  ok(['db', 'create', store]);
  ok(['--store', store, 'layerstack', 'init', '--name', 'demo', join(dir, 'src')]);
  pg.psql('CREATE DATABASE clitour');
  const url = `postgres://layerfs@127.0.0.1:${pg.port}/clitour`;
  assert.equal(cli(['--json', '--store', store, 'remote', 'add', 'origin', url.replace('layerfs@', 'layerfs:pw@')], env).json.error.code, 'ERR_INVALID_ARGUMENT');
  ok(['--store', store, 'remote', 'add', 'origin', url]);
  assert.deepEqual(ok(['--store', store, 'remote', 'ls']).remotes.map((r: any) => r.name), ['origin']);
  assert.equal(ok(['--store', store, 'remote', 'init']).outcome, 'Created');
  ok(['--store', store, 'branch', 'fork', '--name', 'w', '--layer', 'demo']);
  assert.equal(ok(['--store', store, 'push', 'origin', 'demo']).outcome, 'Pushed');
  assert.equal(ok(['--store', store, 'push', 'w']).outcome, 'Pushed');
  const other = join(dir, 'b.sqlite');
  const cloned = ok(['clone', url, other, '--layerstack', 'demo']);
  assert.equal(cloned.outcome, 'Cloned');
  assert.equal(ok(['--store', other, 'fetch']).transfer.objects, 0);
  const fork = ok(['--store', other, 'branch', 'fork', '--name', 'mine', '--layer', 'origin/demo']);
  assert.equal(fork.branch.baseLayerId, ok(['--store', store, 'query', 'layers']).layers[0].id);
  assert.deepEqual(ok(['--store', other, 'remote', 'refs']).refs.map((r: any) => r.ref).sort(), ['origin/demo', 'origin/w']);
  // A second Branch named w elsewhere (another id) is refused by name.
  const third = join(dir, 'c.sqlite');
  ok(['clone', url, third]);
  ok(['--store', third, 'branch', 'fork', '--name', 'x', '--layer', 'demo']);
  // Two clones commit on w; the second push is stale.
  for (const [s, f] of [[other, 'o.txt'], [third, 't.txt']] as const) {
    const c = Client.connect(s);
    await commitFiles(c, 'w', join(dir, `ws-${f}`), { [f]: f });
    c.close();
  }
  ok(['--store', other, 'push', 'w']);
  const stale = cli(['--json', '--store', third, 'push', '--strict', 'w'], env);
  assert.equal(stale.code, 3, stale.stderr);
  assert.equal(stale.json.error.code, 'ERR_HEAD_MOVED');
  // Without --strict the stale push reconciles: both files are on the remote Branch.
  const rec = ok(['--store', third, 'push', 'w']);
  assert.equal(rec.outcome, 'Pushed');
  assert.equal(rec.reconciled.attempts, 1);
  const back = Client.connect(other);
  await back.fetch(undefined, { password: PASSWORD });
  assert.deepEqual(['o.txt', 't.txt'].map((f) => back.cat('origin/w', f).toString()), ['o.txt', 't.txt']);
  back.close();
  ok(['--store', other, 'remote', 'remove', 'origin']);
  assert.deepEqual(ok(['--store', other, 'remote', 'refs']).refs, []);
});

test('TLS: verify-full against the server certificate works; a plain connection and an unknown certificate are refused', async () => {
  const tls = await startCluster({ password: PASSWORD, tls: true });
  try {
    const dir = tempDir();
    const a = await storeWithDemo(dir);
    const base = `postgres://layerfs@localhost:${tls.port}/postgres`;
    a.remoteAdd('secure', `${base}?sslmode=verify-full&sslrootcert=${encodeURIComponent(tls.caFile!)}`);
    a.remoteAdd('plain', `${base}?sslmode=disable`);
    const otherCa = join(dir, 'other.crt');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost', '-keyout', join(dir, 'other.key'), '-out', otherCa], { stdio: 'ignore' });
    a.remoteAdd('forged', `${base}?sslmode=verify-full&sslrootcert=${encodeURIComponent(otherCa)}`);
    await withEnv({ PGPASSWORD: PASSWORD }, async () => {
      await a.remoteInit('secure');
      assert.equal((await a.push('demo', { remote: 'secure' })).outcome, 'Pushed');
      await assert.rejects(a.fetch('plain'), code('ERR_REMOTE_AUTH'));
      await assert.rejects(a.fetch('forged'), code('ERR_REMOTE_AUTH'));
    });
    a.close();
  } finally {
    tls.stop();
  }
});
