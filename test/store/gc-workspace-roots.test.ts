/**
 * gc keeps what an open Workspace stands on. Workspace rows belong to lib/workspace; retention
 * (lib/history) takes their bases as an argument. These tests pin that the SDK passes them: a
 * Workspace whose base Commit retention no longer keeps can still be read, compared and
 * committed after gc, and only once it ends is that Commit reclaimed. Deletions refuse while a
 * Workspace is open on any Branch they remove, naming it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { keptStates } from '../../lib/history/index.js';
import { workspaceRoots } from '../../lib/workspace/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

function source(dir: string): string {
  const src = join(dir, 'src');
  mkdirSync(src, { recursive: true });
  for (let i = 0; i < 5; i++) writeFileSync(join(src, `t${i}.txt`), `line ${i}\n`.repeat(40));
  return src;
}

async function created(c: Client, ws: string): Promise<string> {
  const r = await c.commitWorkspace(ws);
  assert.equal(r.outcome, 'Created');
  return r.outcome === 'Created' ? r.commit.id : '';
}

/** What a gc dry run would collect on a second handle, given these open Workspace bases. */
async function garbageWith(path: string, withWorkspaces: boolean): Promise<number> {
  const s = Store.open(path);
  try {
    const r = await s.gc({ roots: () => keptStates(s, withWorkspaces ? workspaceRoots(s) : []), dryRun: true });
    return r.garbageObjects;
  } finally {
    s.close();
  }
}

test('gc keeps an open Workspace\'s base Commit that retention no longer keeps; reclaims it once the Workspace ends', async () => {
  const dir = tempDir();
  const path = join(dir, 's.sqlite');
  let c = Client.create(path);
  try {
    await c.initLayerStack({ name: 'demo', source: source(dir) });
    c.forkBranch({ name: 'main', layer: 'demo' });
    c.setRetention({ branchCommits: 1 });
    const wa = join(dir, 'wa');
    const wb = join(dir, 'wb');
    const only = seededBytes(11, 60_000);
    await c.createWorkspace('main', { at: wa });
    writeFileSync(join(wa, 'only-in-c1.bin'), only);
    const c1 = await created(c, wa);
    // B starts from c1 and removes the file: the head no longer reaches its bytes, A's base does.
    await c.createWorkspace('main', { at: wb });
    rmSync(join(wb, 'only-in-c1.bin'));
    await created(c, wb);
    c.close();
    assert.ok((await garbageWith(path, false)) > 0, 'without the Workspace bases gc would reclaim c1');
    assert.equal(await garbageWith(path, true), 0);
    c = Client.connect(path);
    const g = await c.gc();
    assert.equal(g.deletedObjects, 0);
    assert.deepEqual(c.cat(c1, 'only-in-c1.bin'), only);
    assert.deepEqual((await c.workspaceStatus(wa)).changes, []);
    // A's commit reconciles against its base c1: it needs c1's tree.
    writeFileSync(join(wa, 't0.txt'), readFileSync(join(wa, 't0.txt'), 'utf8') + 'more\n');
    await created(c, wa);
    for (const ws of [wa, wb]) assert.equal((await c.endWorkspace(ws)).outcome, 'Ended');
    const after = await c.gc();
    assert.ok(after.deletedObjects > 0, `${after.deletedObjects}`);
    assert.throws(() => c.ls(c1), (e: unknown) => isLayerFsError(e, 'ERR_PRUNED'));
    assertIntact(c);
  } finally {
    c.close();
  }
});

test('layerstack delete refuses while a Workspace is open on any of its Branches, and names it', async () => {
  const dir = tempDir();
  const c = Client.create(join(dir, 's.sqlite'));
  try {
    await c.initLayerStack({ name: 'demo', source: source(dir) });
    c.forkBranch({ name: 'a', layer: 'demo' });
    c.forkBranch({ name: 'b', layer: 'demo' });
    const ws = await c.createWorkspace('b', { at: join(dir, 'wb') });
    assert.throws(
      () => c.deleteLayerStack('demo'),
      (e: unknown) => isLayerFsError(e, 'ERR_BUSY') && JSON.stringify(e.details.workspaces) === JSON.stringify([ws.id]) && e.message.includes(ws.id),
    );
    await assert.rejects(c.deleteBranch('b'), (e: unknown) => isLayerFsError(e, 'ERR_BUSY') && e.message.includes(ws.id));
    assert.equal((await c.deleteBranch('a')).outcome, 'Deleted');
    assert.equal((await c.endWorkspace(ws.id)).outcome, 'Ended');
    assert.deepEqual(c.deleteLayerStack('demo').branches, ['b']);
    assertIntact(c);
  } finally {
    c.close();
  }
});
