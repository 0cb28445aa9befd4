/**
 * Remotes and format 12's dictionary refs (lib/store/dictionary-refs.ts): a repacked Store, whose
 * content groups are dictionary frames named by a ref, pushes to PostgreSQL and clones back with
 * the same states; what travels names a dictionary by its id, and a fetch into a Store with its
 * own dictionary ref stores and verifies the objects.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { Codec, Store } from '../../lib/store/index.js';
import { REMOTE_SCHEMA_VERSION } from '../../lib/remote/index.js';
import { startCluster, type PgCluster } from '../helpers/postgres.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { commitFiles, exported, writeTree } from './fixture.js';

let pg: PgCluster;
before(async () => {
  pg = await startCluster();
});
after(() => pg?.stop());

function dictRows(path: string): number {
  const s = Store.open(path, { readonly: true });
  try {
    return s.db.prepare('SELECT count(*) FROM objects WHERE codec = ? AND length(base) < 32').pluck().get(Codec.Dict) as number;
  } finally {
    s.close();
  }
}

test('a repacked Store (dictionary frames named by ref) pushes, clones and fetches back the same states; both sides verify', { timeout: 300_000 }, async () => {
  const dir = tempDir();
  pg.psql('CREATE DATABASE dict1');
  const url = pg.url.replace('/postgres?', '/dict1?');
  writeTree(dir, 600);
  const a = Client.create(join(dir, 'a.sqlite'));
  await a.initLayerStack({ name: 'demo', source: join(dir, 'src') });
  a.forkBranch({ name: 'work', layer: 'demo' });
  await commitFiles(a, 'work', join(dir, 'ws1'), { 'deep/f4.txt': 'changed\n'.repeat(90), 'new.txt': 'file 2\n'.repeat(70) });
  await a.repack();
  assert.ok(dictRows(join(dir, 'a.sqlite')) > 50, 'the repack wrote dictionary frames named by ref');
  a.remoteAdd('origin', url);
  assert.equal((await a.remoteInit()).to, REMOTE_SCHEMA_VERSION);
  assert.equal((await a.push('demo')).outcome, 'Pushed');
  assert.equal((await a.push('work')).outcome, 'Pushed');
  assert.equal((await a.remoteVerify()).ok, true);
  const { client: b } = await Client.clone(url, join(dir, 'b.sqlite'));
  assert.deepEqual(exported(b, 'work', join(dir, 'xb')), exported(a, 'work', join(dir, 'xa')));
  assert.deepEqual(exported(b, 'demo', join(dir, 'yb')), exported(a, 'demo', join(dir, 'ya')));
  assertIntact(b);
  // The clone repacks (its own dictionary and ref), commits and pushes; the first Store fetches.
  await b.repack();
  await commitFiles(b, 'work', join(dir, 'ws2'), { 'from-b.txt': 'file 9\n'.repeat(80) });
  assert.equal((await b.push('work')).outcome, 'Pushed');
  const f = await a.fetch();
  assert.ok(f.transfer.objects > 0);
  assert.equal(a.cat('origin/work', 'from-b.txt').toString(), 'file 9\n'.repeat(80));
  assert.equal((await a.remoteVerify()).ok, true);
  assertIntact(a);
  a.close();
  b.close();
});
