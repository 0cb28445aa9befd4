// Cell: remotes on PostgreSQL. A throw-away PostgreSQL 15 cluster (test/helpers/postgres.ts,
// fsync on, Unix socket) holds the remote. Untimed setup: import the fixture (initLayerStack),
// fork Branch work, remote add + remote init. Timed, each apart:
//   push        push of the LayerStack to the empty remote              → ms (pushMs)
//   clone       clone of the remote into a new Store (objects re-hashed) → cloneMs
//   push10      after a Workspace commit of 10 edited files, push of Branch work → push10Ms
// Bytes: transfer.bytes (stored bytes sent: frames as stored); for push10 also the commit's
// bytesInserted (canonical bytes of its new objects: the changed files' blobs and the pages).
// After timing: the clone's object count equals the source's, and it verifies.
//   node --import tsx bench/cells/layerfs-remote.ts --dir FIXTURE --tmp SCRATCH --tier 1000 --files 1000

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cellArgs, requireArgs, TREE_EDIT_OPTIONS, treeEdits } from '../lib/args.js';
import { emit, fail, round1 } from '../lib/cell.js';
import { applyEdits } from '../fixtures/tree.js';
import { startCluster } from '../../test/helpers/postgres.js';

const CELL = 'layerfs-remote';
const a = cellArgs(TREE_EDIT_OPTIONS);
const tier = a.tier!;

try {
  requireArgs(a, ['dir', 'tmp', 'files']);
  const tmp = path.resolve(a.tmp);
  const { Client } = await import(new URL('../../lib/sdk/index.js', import.meta.url).href);
  const pg = await startCluster({ durable: true });
  try {
    const c = Client.create(path.join(tmp, 'a.layerfs'));
    await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
    c.forkBranch({ name: 'work', layer: 'bench' });
    c.remoteAdd('origin', pg.url);
    await c.remoteInit();

    let t = performance.now();
    const push = await c.push('bench');
    const pushMs = performance.now() - t;

    t = performance.now();
    const cloned = await Client.clone(pg.url, path.join(tmp, 'b.layerfs'));
    const cloneMs = performance.now() - t;
    const objects = c.info().objects;
    if (cloned.client.info().objects !== objects) throw new Error(`clone holds ${cloned.client.info().objects} objects, the source ${objects}`);
    const v = cloned.client.verify();
    if (!v.ok) throw new Error('the clone does not verify');
    cloned.client.close();

    const ws = await c.createWorkspace('work', { at: path.join(tmp, 'ws'), projection: 'materialize' });
    const edits = treeEdits(a);
    applyEdits(ws.path, edits);
    const changedBytes = edits.reduce((s, e) => s + fs.statSync(path.join(ws.path, e.relPath)).size, 0);
    const commit = await c.commitWorkspace(ws.id);
    if (commit.outcome !== 'Created') throw new Error(`commit: ${commit.outcome}`);
    await c.endWorkspace(ws.id);
    t = performance.now();
    const push10 = await c.push('work');
    const push10Ms = performance.now() - t;
    c.close();
    emit({
      cell: CELL,
      tier,
      ms: round1(pushMs),
      pushMs: round1(pushMs),
      cloneMs: round1(cloneMs),
      push10Ms: round1(push10Ms),
      files: Number(a.files),
      objects,
      pushBytes: push.transfer.bytes,
      pushObjects: push.transfer.objects,
      pushQueries: push.transfer.queries,
      cloneBytes: cloned.result.transfer.bytes,
      push10Bytes: push10.transfer.bytes,
      push10Objects: push10.transfer.objects,
      push10Asked: push10.transfer.asked,
      changedBytes,
      commitBytesInserted: commit.bytesInserted,
      remoteBytes: Number(pg.psql(`SELECT pg_database_size('postgres')`).trim()),
    });
  } finally {
    pg.stop();
  }
} catch (err) {
  fail(CELL, tier, err);
}
