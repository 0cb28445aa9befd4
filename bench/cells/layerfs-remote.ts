// Cell: remotes on PostgreSQL. A throw-away PostgreSQL 15 cluster (test/helpers/postgres.ts,
// fsync on, Unix socket) holds the remote. Untimed setup: import the fixture (initLayerStack),
// fork Branch work, remote add + remote init. Timed, each apart:
//   push        push of the LayerStack to the empty remote              → ms (pushMs)
//   clone       clone of the remote into a new Store (objects re-hashed) → cloneMs
//   push10      after a Workspace commit of 10 edited files, push of Branch work → push10Ms
//   push enc / clone enc: the same push and clone to and from an encrypted remote (another
//               database, `remote init` with a key file) → pushEncMs, cloneEncMs
//   race        8 processes with their own Stores push a commit each to one Branch at once
//               (_remote-race.ts): reconciling → raceMs (all must land), strict → raceStrictMs
//               (exactly one wins)
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
import { randomBytes } from 'node:crypto';
import { startCluster } from '../../test/helpers/postgres.js';
import { race } from './_remote-race.js';

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

    // The same push and clone, encrypted: another database of the cluster, its own key.
    pg.psql('CREATE DATABASE sealed');
    const sealedUrl = pg.url.replace('/postgres?', '/sealed?');
    const keyFile = path.join(tmp, 'sealed.key');
    fs.writeFileSync(keyFile, randomBytes(32), { mode: 0o600 });
    c.remoteAdd('sealed', sealedUrl);
    await c.remoteInit('sealed', { keyFile });
    t = performance.now();
    const pushEnc = await c.push('bench', { remote: 'sealed', keyFile });
    const pushEncMs = performance.now() - t;
    t = performance.now();
    const clonedEnc = await Client.clone(sealedUrl, path.join(tmp, 'c.layerfs'), { keyFile });
    const cloneEncMs = performance.now() - t;
    if (clonedEnc.client.info().objects !== objects) throw new Error('the encrypted clone holds another number of objects');
    clonedEnc.client.close();

    // The race, on a small LayerStack of its own.
    const small = path.join(tmp, 'small');
    fs.mkdirSync(small);
    for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(small, `f${i}.txt`), `file ${i}\n`.repeat(20));
    await c.initLayerStack({ name: 'race', source: small });
    c.forkBranch({ name: 'shared', layer: 'race' });
    c.forkBranch({ name: 'strict', layer: 'race' });
    await c.push('shared');
    await c.push('strict');
    c.close();
    const rec = await race(Client, pg.url, tmp, 'race', 'shared', false);
    if (rec.pushed !== 8 || rec.remoteCommits !== 8) throw new Error(`reconciling race: ${JSON.stringify(rec)}`);
    const strict = await race(Client, pg.url, tmp, 'race', 'strict', true);
    if (strict.pushed !== 1 || strict.headMoved !== 7) throw new Error(`strict race: ${JSON.stringify(strict)}`);
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
      pushEncMs: round1(pushEncMs),
      pushEncBytes: pushEnc.transfer.bytes,
      cloneEncMs: round1(cloneEncMs),
      raceMs: round1(rec.ms),
      raceReconciles: rec.reconciles,
      raceStrictMs: round1(strict.ms),
      raceStrictHeadMoved: strict.headMoved,
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
