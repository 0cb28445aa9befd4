/**
 * The one publish path of Workspace Commits, for both projections: a commit with nothing to
 * store is UpToDate only while the Branch has the head AND the base Layer the Workspace expects
 * (a Commit's id covers its base Layer). The product never moves a Branch's base Layer in place,
 * so the test moves it with SQL, as a damaged or foreign Store could.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { fuseAvailable } from '../../lib/fuse/index.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

const fuseSkip = !fuseAvailable().ok ? `FUSE is not usable here: ${fuseAvailable().reason}` : process.getuid?.() !== 0 ? 'needs root (kernel backend)' : false;

/** A LayerStack with two Layers, and Branch `b` (no Commits) forked from the first. */
async function setup(): Promise<{ dir: string; storePath: string; client: Client; first: string; second: string }> {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'a\n');
  const storePath = join(dir, 'store.sqlite');
  const client = Client.create(storePath);
  const first = (await client.initLayerStack({ name: 'proj', source: src })).layer.id;
  client.forkBranch({ name: 'other', layer: first });
  const ws = await client.createWorkspace('other', { at: join(dir, 'ws-other'), projection: 'materialize' });
  writeFileSync(join(ws.path, 'b.txt'), 'b\n');
  assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
  assert.equal((await client.endWorkspace(ws.id)).outcome, 'Ended');
  const add = client.add('other');
  assert.equal(add.outcome, 'Added');
  const second = add.outcome === 'Added' ? add.layer.id : '';
  client.forkBranch({ name: 'b', layer: first });
  return { dir, storePath, client, first, second };
}

function moveBase(storePath: string, branch: string, layer: string): void {
  const db = new Database(storePath);
  try {
    db.prepare('UPDATE branches SET base_layer_id = ? WHERE name = ?').run(Buffer.from(layer, 'hex'), branch);
  } finally {
    db.close();
  }
}

for (const projection of ['materialize', 'fuse'] as const) {
  test(`${projection}: nothing to commit checks the Branch head and its base Layer`, { skip: projection === 'fuse' && fuseSkip, timeout: 120_000 }, async () => {
    const { dir, storePath, client, first, second } = await setup();
    try {
      const ws = await client.createWorkspace('b', { at: join(dir, 'ws-b'), projection });
      moveBase(storePath, 'b', second);
      // The head (none) is the one expected, the base Layer is not: strict refuses.
      const strict = await client.commitWorkspace(ws.id, { strict: true });
      assert.equal(strict.outcome, 'HeadMoved');
      // Not strict: nothing to publish, and the Workspace does not move onto another base Layer.
      const loose = await client.commitWorkspace(ws.id);
      assert.equal(loose.outcome, 'UpToDate');
      const row = client.workspace(ws.id);
      assert.equal(row.expectedHeadId, null);
      assert.equal(row.baseRootId, client.layer(first).rootId);
      moveBase(storePath, 'b', first);
      assert.equal((await client.commitWorkspace(ws.id, { strict: true })).outcome, 'UpToDate');
      assert.equal((await client.endWorkspace(ws.id)).outcome, 'Ended');
      assertIntact(client);
    } finally {
      if (projection === 'fuse') await client.stopDaemon({ discard: true }).catch(() => {});
      client.close();
    }
  });
}
