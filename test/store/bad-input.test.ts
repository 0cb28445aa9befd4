import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';
import { loaderFlags } from '../../lib/workspace/node-child.js';

function snapshot(client: Client) {
  return { layers: client.layers(), stacks: client.layerStacks(), objects: client.info().objects };
}

test('failed imports leave the Store exactly as before', async () => {
  const dir = tempDir();
  const store = join(dir, 'store.sqlite');
  const client = Client.create(store);
  try {
    mkdirSync(join(dir, 'ok'));
    writeFileSync(join(dir, 'ok/a'), 'a');
    await client.initLayerStack({ name: 'first', source: join(dir, 'ok') });
    const before = snapshot(client);

    await assert.rejects(client.initLayerStack({ name: 'x', source: join(dir, 'missing') }), { code: 'ERR_NOT_FOUND' });
    await assert.rejects(client.initLayerStack({ name: 'x', source: join(dir, 'ok/a') }), { code: 'ERR_NOT_A_DIRECTORY' });
    await assert.rejects(client.initLayerStack({ name: 'first', source: join(dir, 'ok') }), { code: 'ERR_NAME_TAKEN' });
    for (const bad of ['', 'UPPER', '-lead', 'trail-', 'a/b', 'x'.repeat(64), 'sp ace']) {
      await assert.rejects(client.initLayerStack({ name: bad, empty: true }), { code: 'ERR_INVALID_NAME' }, bad);
    }
    assert.deepEqual(snapshot(client), before);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('a file that vanishes mid-import fails with its path named and stores nothing', async () => {
  const dir = tempDir();
  const client = Client.create(join(dir, 'store.sqlite'));
  try {
    const src = join(dir, 'src');
    mkdirSync(src);
    // Root can read everything, so a file that disappears after the walk stands in for an
    // unreadable one: the walk and the first batches start synchronously inside the call.
    for (let i = 0; i < 2000; i++) writeFileSync(join(src, `f${String(i).padStart(4, '0')}`), 'x'.repeat(i));
    const before = snapshot(client);
    const p = client.initLayerStack({ name: 'racy', source: src, onProgress: () => {} });
    // Deleting a late file while early batches are read makes that entry fail to open.
    rmSync(join(src, 'f1999'));
    await assert.rejects(p, (e: any) => e.code === 'ERR_NATIVE_IO' && /f1999/.test(e.details.path) && e.details.errno === 'ENOENT');
    assert.deepEqual(snapshot(client), before);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('db create refuses existing paths; connect refuses what is not a supported Store', () => {
  const dir = tempDir();
  const store = join(dir, 'store.sqlite');
  Client.create(store).close();
  assert.equal((readFileSync(store).length > 0), true);
  assert.throws(() => Client.create(store), { code: 'ERR_EXISTS' });
  // Like git init, create makes the Store's directory (0700); a file in the way is refused.
  Client.create(join(dir, 'nodir/deeper/store.sqlite')).close();
  assert.equal(statSync(join(dir, 'nodir/deeper')).mode & 0o777, 0o700);
  writeFileSync(join(dir, 'afile'), 'x');
  assert.throws(() => Client.create(join(dir, 'afile/store.sqlite')), { code: 'ERR_NOT_A_DIRECTORY' });

  const text = join(dir, 'text');
  writeFileSync(text, 'just text, not a database at all........................................................................');
  assert.throws(() => Client.connect(text), { code: 'ERR_NOT_A_STORE' });
  assert.throws(() => Client.connect(join(dir, 'missing')), { code: 'ERR_NOT_FOUND' });
  assert.throws(() => Client.connect(dir), { code: 'ERR_NOT_A_STORE' });

  const other = join(dir, 'other.sqlite');
  const db = new Database(other);
  db.exec('CREATE TABLE t (x)');
  db.close();
  assert.throws(() => Client.connect(other), { code: 'ERR_NOT_A_STORE' });

  const newer = join(dir, 'newer.sqlite');
  Client.create(newer).close();
  const d2 = new Database(newer);
  d2.pragma('user_version = 99');
  d2.close();
  assert.throws(() => Client.connect(newer), (e: any) => e.code === 'ERR_UNSUPPORTED_FORMAT' && /upgrade/.test(e.message));

  const truncated = join(dir, 'truncated.sqlite');
  writeFileSync(truncated, readFileSync(store).subarray(0, 100));
  assert.throws(() => Client.connect(truncated), (e: any) => ['ERR_CORRUPT', 'ERR_NOT_A_STORE'].includes(e.code));
});

test('concurrent db create on one path: exactly one wins', async () => {
  const dir = tempDir();
  const store = join(dir, 'race.sqlite');
  const { spawn } = await import('node:child_process');
  const script = `import('${new URL('../../lib/sdk/index.ts', import.meta.url).pathname}').then(({ Client }) => { try { Client.create(process.argv[1]).close(); console.log('won'); } catch (e) { console.log(e.code); } })`;
  const results = await Promise.all(
    Array.from({ length: 6 }, () =>
      new Promise<string>((resolve) => {
        const c = spawn(process.execPath, [...loaderFlags(), '-e', script, store], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        c.stdout.on('data', (d) => (out += d));
        c.on('close', () => resolve(out.trim()));
      }),
    ),
  );
  assert.equal(results.filter((r) => r === 'won').length, 1, results.join(','));
  assert.equal(results.filter((r) => r === 'ERR_EXISTS').length, 5, results.join(','));
  const c = Client.connect(store);
  assertIntact(c);
  c.close();
});
