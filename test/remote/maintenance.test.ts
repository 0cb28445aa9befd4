/**
 * A fetch stores objects in several transactions and publishes them at its end: it shares the
 * Store's maintenance lease, so gc and repack (which would take what it stored, or found stored,
 * for garbage) refuse while it runs, and it refuses while either runs. Against a real PostgreSQL
 * cluster started here.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { releaseMaintenance, takeMaintenance } from '../../lib/store/maintenance-lease.js';
import { maintenanceClaim } from '../../lib/workspace/owner.js';
import { startCluster, type PgCluster } from '../helpers/postgres.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { commitFiles, exported, writeTree } from './fixture.js';

let pg: PgCluster;
before(async () => {
  pg = await startCluster();
});
after(() => pg?.stop());

/** Takes the lease as another pass of this (live) process would; returns a function that gives it back. */
function hold(path: string, pass: string, shared: boolean): () => void {
  const s = Store.open(path);
  const token = s.writeSync(() => takeMaintenance(s.db, path, pass, maintenanceClaim(), shared));
  return () => {
    s.writeSync(() => releaseMaintenance(s.db, token));
    s.close();
  };
}

function leaseRows(path: string): string[] {
  const s = Store.open(path, { readonly: true });
  try {
    return s.db.prepare("SELECT key FROM meta WHERE key LIKE 'maintenance%'").pluck().all() as string[];
  } finally {
    s.close();
  }
}

const busy = (pattern: RegExp) => (e: unknown) => isLayerFsError(e) && e.code === 'ERR_BUSY' && pattern.test(e.message);

test('fetch refuses while gc runs; gc and repack refuse while a fetch runs; a fetch leaves no lease behind', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  pg.psql('CREATE DATABASE lease');
  const url = pg.url.replace('/postgres?', '/lease?');
  writeTree(dir);
  const a = Client.create(join(dir, 'a.sqlite'));
  const bPath = join(dir, 'b.sqlite');
  const b = Client.create(bPath);
  try {
    await a.initLayerStack({ name: 'demo', source: join(dir, 'src') });
    a.forkBranch({ name: 'work', layer: 'demo' });
    await commitFiles(a, 'work', join(dir, 'ws'), { 'new.txt': 'hello\n' });
    a.remoteAdd('origin', url);
    await a.remoteInit();
    assert.equal((await a.push('demo')).outcome, 'Pushed');
    assert.equal((await a.push('work')).outcome, 'Pushed');
    b.remoteAdd('origin', url);

    const gcRuns = hold(bPath, 'gc', false);
    await assert.rejects(b.fetch(), busy(/^db gc is running on this Store \(process \d+/));
    gcRuns();

    const fetchRuns = hold(bPath, 'fetch', true);
    await assert.rejects(b.gc(), busy(/^a fetch is running on this Store/));
    await assert.rejects(b.repack(), busy(/^a fetch is running on this Store/));
    assert.equal((await b.gc({ dryRun: true })).outcome, 'DryRun');
    // Fetches share it.
    const fetched = await b.fetch();
    assert.ok(fetched.commits >= 1);
    fetchRuns();

    assert.deepEqual(leaseRows(bPath), []);
    assert.equal((await b.gc()).outcome, 'Collected');
    assert.deepEqual(exported(b, 'origin/work', join(dir, 'out-b')), exported(a, 'work', join(dir, 'out-a')));
    assertIntact(b);
  } finally {
    a.close();
    b.close();
  }
});
