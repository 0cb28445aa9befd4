/**
 * Reconciling commits of materialized Workspaces: two Workspaces of one Branch, the second
 * commits after the head moved. Every test ends with the Store verified.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { FORMAT_VERSION } from '../../lib/store/index.js';
import { asFormat } from '../helpers/formats.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { walkForCompare } from '../helpers/treewalk.js';
import { assertIntact } from '../helpers/integrity.js';

const TEXT = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join('');

async function setup() {
  const dir = tempDir('layerfs-reconcile-');
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib'), { recursive: true });
  writeFileSync(join(src, 'lib/a.txt'), TEXT);
  writeFileSync(join(src, 'lib/b.txt'), 'b\n');
  writeFileSync(join(src, 'data.bin'), seededBytes(3, 4096));
  const client = Client.create(join(dir, 'store.sqlite'));
  const layer = (await client.initLayerStack({ name: 'p', source: src })).layer.id;
  client.forkBranch({ name: 'shared', layer });
  const w1 = await client.createWorkspace('shared', { at: join(dir, 'w1'), projection: 'materialize' });
  const w2 = await client.createWorkspace('shared', { at: join(dir, 'w2'), projection: 'materialize' });
  return { dir, client, w1, w2 };
}

function edit(text: string, line: number, to: string): string {
  const lines = text.split('\n');
  lines[line - 1] = to;
  return lines.join('\n');
}

/** The Workspace shows exactly the Branch head. */
function assertShowsHead(client: Client, dir: string, at: string, tag: string): void {
  const out = join(dir, `export-${tag}`);
  client.export('shared', out);
  const shape = (root: string) => walkForCompare(root).slice(1).map((e) => [e.path, e.kind, e.mode, e.size, e.content, e.target]);
  assert.deepEqual(shape(at), shape(out));
  rmSync(out, { recursive: true });
}

test('changes to different files land on the moved head; the Workspace then shows both sides', async () => {
  const { dir, client, w1, w2 } = await setup();
  try {
    writeFileSync(join(w1.path, 'one.txt'), '1\n');
    writeFileSync(join(w2.path, 'two.txt'), '2\n');
    mkdirSync(join(w2.path, 'newdir/sub'), { recursive: true });
    writeFileSync(join(w2.path, 'newdir/sub/x'), 'x\n');
    const r1 = await client.commitWorkspace(w1.id, { message: 'one' });
    assert.equal(r1.outcome, 'Created');
    const r2 = await client.commitWorkspace(w2.id, { message: 'two' });
    assert.equal(r2.outcome, 'Created');
    assert.ok(r2.outcome === 'Created' && r2.reconciled, 'reconciled');
    if (r2.outcome === 'Created' && r1.outcome === 'Created') {
      assert.equal(r2.previousHead, r1.commit.id);
      assert.equal(r2.reconciled!.retries, 0);
      assert.ok(r2.phases.reconcile! >= 0);
    }
    assert.deepEqual(client.log('shared').map((c) => c.message), ['two', 'one']);
    assert.equal(client.cat('shared', 'one.txt').toString(), '1\n');
    assert.equal(client.cat('shared', 'newdir/sub/x').toString(), 'x\n');
    // The other side's file is written into w2, and w2 is clean on the new head.
    assert.equal(readFileSync(join(w2.path, 'one.txt'), 'utf8'), '1\n');
    assert.equal((await client.workspaceStatus(w2.id)).clean, true);
    assertShowsHead(client, dir, w2.path, 'a');
    // Both sides created an inode under the same serial; w2's kept working after renumbering.
    writeFileSync(join(w2.path, 'two.txt'), '2 again\n');
    const r3 = await client.commitWorkspace(w2.id);
    assert.equal(r3.outcome, 'Created');
    assert.equal(client.cat('shared', 'two.txt').toString(), '2 again\n');
    assert.equal(client.cat('shared', 'one.txt').toString(), '1\n');
    // w1 is clean but behind: update moves it onto the head.
    const u = await client.updateWorkspace(w1.id);
    assert.equal(u.outcome, 'Updated');
    assert.equal(readFileSync(join(w1.path, 'two.txt'), 'utf8'), '2 again\n');
    assert.equal((await client.workspaceStatus(w1.id)).clean, true);
    assertShowsHead(client, dir, w1.path, 'b');
    writeFileSync(join(w1.path, 'lib/b.txt'), 'b from w1\n');
    const r4 = await client.commitWorkspace(w1.id);
    assert.ok(r4.outcome === 'Created' && !r4.reconciled, 'a plain commit after update');
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('disjoint line edits of one text file merge; overlapping ones conflict and publish nothing', async () => {
  const { dir, client, w1, w2 } = await setup();
  try {
    writeFileSync(join(w1.path, 'lib/a.txt'), edit(TEXT, 2, 'line 2 by w1'));
    writeFileSync(join(w2.path, 'lib/a.txt'), edit(TEXT, 15, 'line 15 by w2'));
    assert.equal((await client.commitWorkspace(w1.id)).outcome, 'Created');
    const r2 = await client.commitWorkspace(w2.id);
    assert.equal(r2.outcome, 'Created');
    assert.deepEqual(r2.outcome === 'Created' && r2.reconciled?.merged, ['lib/a.txt']);
    const both = edit(edit(TEXT, 2, 'line 2 by w1'), 15, 'line 15 by w2');
    assert.equal(client.cat('shared', 'lib/a.txt').toString(), both);
    assert.equal(readFileSync(join(w2.path, 'lib/a.txt'), 'utf8'), both);

    // Now both change line 5: a conflict, nothing published, the working tree untouched.
    await client.updateWorkspace(w1.id);
    writeFileSync(join(w1.path, 'lib/a.txt'), edit(both, 5, 'five by w1'));
    writeFileSync(join(w2.path, 'lib/a.txt'), edit(both, 5, 'five by w2'));
    const head = await client.commitWorkspace(w1.id);
    assert.equal(head.outcome, 'Created');
    const c = await client.commitWorkspace(w2.id);
    assert.equal(c.outcome, 'Conflicted');
    assert.equal(client.log('shared').length, 3);
    assert.equal(readFileSync(join(w2.path, 'lib/a.txt'), 'utf8'), edit(both, 5, 'five by w2'));
    const list = client.workspaceConflicts(w2.id);
    assert.equal(list.length, 1);
    assert.equal(list[0]!.kind, 'text');
    assert.equal(list[0]!.path, 'lib/a.txt');
    assert.deepEqual(list[0]!.lines, [{ base: [4, 5], head: [4, 5], workspace: [4, 5] }]);
    // Resolve with the head's version; the next commit publishes.
    client.resolveWorkspaceConflict(w2.id, list[0]!.id, 'branch');
    assert.equal(readFileSync(join(w2.path, 'lib/a.txt'), 'utf8'), edit(both, 5, 'five by w1'));
    const again = await client.commitWorkspace(w2.id);
    assert.ok(again.outcome === 'Created' || again.outcome === 'UpToDate', again.outcome);
    assert.deepEqual(client.workspaceConflicts(w2.id), []);
    assert.equal(client.cat('shared', 'lib/a.txt').toString(), edit(both, 5, 'five by w1'));
    assertShowsHead(client, dir, w2.path, 'c');
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('binary edits on both sides, delete vs modify and two adds conflict; resolve --working-tree publishes the Workspace version', async () => {
  const { client, w1, w2 } = await setup();
  try {
    writeFileSync(join(w1.path, 'data.bin'), seededBytes(4, 4096));
    writeFileSync(join(w2.path, 'data.bin'), seededBytes(5, 4096));
    writeFileSync(join(w1.path, 'lib/b.txt'), 'b changed\n');
    rmSync(join(w2.path, 'lib/b.txt'));
    writeFileSync(join(w1.path, 'same.txt'), 'from w1\n');
    writeFileSync(join(w2.path, 'same.txt'), 'from w2\n');
    assert.equal((await client.commitWorkspace(w1.id)).outcome, 'Created');
    const c = await client.commitWorkspace(w2.id);
    assert.equal(c.outcome, 'Conflicted');
    const kinds = client.workspaceConflicts(w2.id).map((x) => `${x.kind} ${x.path}`).sort();
    assert.deepEqual(kinds, ['binary data.bin', 'both-added same.txt', 'delete-modify lib/b.txt']);
    assert.equal(client.log('shared').length, 1);
    for (const x of client.workspaceConflicts(w2.id)) client.resolveWorkspaceConflict(w2.id, x.id, 'working-tree');
    const r = await client.commitWorkspace(w2.id);
    assert.equal(r.outcome, 'Created', JSON.stringify(r.outcome === 'Conflicted' && r.conflicts));
    assert.deepEqual(client.cat('shared', 'data.bin'), seededBytes(5, 4096));
    assert.equal(client.cat('shared', 'same.txt').toString(), 'from w2\n');
    assert.throws(() => client.cat('shared', 'lib/b.txt'), { code: 'ERR_NOT_FOUND' });
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('resolve --layer undoes the head\'s change at that path; --working-tree brings back a file the head deleted', async () => {
  const { client, w1, w2 } = await setup();
  try {
    writeFileSync(join(w1.path, 'data.bin'), seededBytes(4, 4096));
    rmSync(join(w1.path, 'lib/b.txt'));
    writeFileSync(join(w2.path, 'data.bin'), seededBytes(5, 4096));
    writeFileSync(join(w2.path, 'lib/b.txt'), 'b kept by w2\n');
    assert.equal((await client.commitWorkspace(w1.id)).outcome, 'Created');
    assert.equal((await client.commitWorkspace(w2.id)).outcome, 'Conflicted');
    const byPath = new Map(client.workspaceConflicts(w2.id).map((x) => [x.path, x]));
    assert.deepEqual([...byPath.values()].map((x) => `${x.kind} ${x.path}`).sort(), ['binary data.bin', 'modify-delete lib/b.txt']);
    client.resolveWorkspaceConflict(w2.id, byPath.get('data.bin')!.id, 'layer');
    assert.deepEqual(readFileSync(join(w2.path, 'data.bin')), seededBytes(3, 4096));
    client.resolveWorkspaceConflict(w2.id, byPath.get('lib/b.txt')!.id, 'working-tree');
    const r = await client.commitWorkspace(w2.id);
    assert.equal(r.outcome, 'Created', JSON.stringify(r.outcome === 'Conflicted' && r.conflicts));
    assert.deepEqual(client.cat('shared', 'data.bin'), seededBytes(3, 4096));
    assert.equal(client.cat('shared', 'lib/b.txt').toString(), 'b kept by w2\n');
    assert.deepEqual(readFileSync(join(w2.path, 'data.bin')), seededBytes(3, 4096));
    assertIntact(client);
  } finally {
    client.close();
  }
});

// A new file that takes a deleted file's inode number reads as a rename and a rewrite: the
// delete-vs-modify and the both-added it meets, once resolved, publish the Workspace's side.
test('a rename with a rewrite meets an edit and an add; resolve --working-tree deletes the old path and takes the new file', async () => {
  const { client, w1, w2 } = await setup();
  try {
    writeFileSync(join(w1.path, 'lib/b.txt'), 'b changed\n');
    writeFileSync(join(w1.path, 'same.txt'), 'from w1\n');
    renameSync(join(w2.path, 'lib/b.txt'), join(w2.path, 'same.txt'));
    writeFileSync(join(w2.path, 'same.txt'), 'from w2\n');
    assert.equal((await client.commitWorkspace(w1.id)).outcome, 'Created');
    const c = await client.commitWorkspace(w2.id);
    assert.equal(c.outcome, 'Conflicted');
    const kinds = client.workspaceConflicts(w2.id).map((x) => `${x.kind} ${x.path}`).sort();
    assert.deepEqual(kinds, ['both-added same.txt', 'delete-modify lib/b.txt']);
    for (const x of client.workspaceConflicts(w2.id)) client.resolveWorkspaceConflict(w2.id, x.id, 'working-tree');
    const r = await client.commitWorkspace(w2.id);
    assert.equal(r.outcome, 'Created', JSON.stringify(r.outcome === 'Conflicted' && r.conflicts));
    assert.equal(client.cat('shared', 'same.txt').toString(), 'from w2\n');
    assert.throws(() => client.cat('shared', 'lib/b.txt'), { code: 'ERR_NOT_FOUND' });
    assert.equal(client.cat('shared', 'lib/a.txt').toString(), TEXT);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('a rename on one side and an edit on the other are carried across (both orders)', async () => {
  const { client, w1, w2 } = await setup();
  try {
    writeFileSync(join(w1.path, 'lib/a.txt'), edit(TEXT, 1, 'first'));
    renameSync(join(w2.path, 'lib/a.txt'), join(w2.path, 'moved.txt'));
    renameSync(join(w2.path, 'lib'), join(w2.path, 'lib2'));
    assert.equal((await client.commitWorkspace(w1.id)).outcome, 'Created');
    const r = await client.commitWorkspace(w2.id);
    assert.equal(r.outcome, 'Created', JSON.stringify(r.outcome === 'Conflicted' && r.conflicts));
    assert.deepEqual(r.outcome === 'Created' && r.reconciled?.merged, ['moved.txt']);
    assert.equal(client.cat('shared', 'moved.txt').toString(), edit(TEXT, 1, 'first'));
    assert.equal(client.cat('shared', 'lib2/b.txt').toString(), 'b\n');
    assert.equal(existsSync(join(w2.path, 'lib')), false);
    assert.equal(readFileSync(join(w2.path, 'moved.txt'), 'utf8'), edit(TEXT, 1, 'first'));
    // The other order: w1 (behind) edits the file under its old path, the head renamed it.
    writeFileSync(join(w1.path, 'lib/b.txt'), 'b edited at the old path\n');
    writeFileSync(join(w1.path, 'lib/new.txt'), 'added in the renamed directory\n');
    const r1 = await client.commitWorkspace(w1.id);
    assert.equal(r1.outcome, 'Created');
    assert.equal(client.cat('shared', 'lib2/b.txt').toString(), 'b edited at the old path\n');
    assert.equal(client.cat('shared', 'lib2/new.txt').toString(), 'added in the renamed directory\n');
    assert.throws(() => client.cat('shared', 'lib/b.txt'), { code: 'ERR_NOT_FOUND' });
    assert.equal(readFileSync(join(w1.path, 'lib2/new.txt'), 'utf8'), 'added in the renamed directory\n');
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('layerstack add reconciles with a moved LayerStack; a conflicting add leaves a resolution Workspace', async () => {
  const { dir, client, w1, w2 } = await setup();
  try {
    const layer = client.layers({ layerStack: 'p' })[0]!.id;
    client.forkBranch({ name: 'other', layer });
    const w3 = await client.createWorkspace('other', { at: join(dir, 'w3'), projection: 'materialize' });
    writeFileSync(join(w1.path, 'lib/a.txt'), edit(TEXT, 1, 'one by shared'));
    writeFileSync(join(w3.path, 'lib/a.txt'), edit(TEXT, 20, 'twenty by other'));
    writeFileSync(join(w3.path, 'other.txt'), 'other\n');
    assert.equal((await client.commitWorkspace(w1.id)).outcome, 'Created');
    assert.equal((await client.commitWorkspace(w3.id)).outcome, 'Created');
    assert.equal(client.add('shared').outcome, 'Added');
    assert.equal(client.add('other', { strict: true }).outcome, 'HeadMoved');
    const added = client.add('other');
    assert.equal(added.outcome, 'Added');
    assert.deepEqual(added.outcome === 'Added' && added.reconciled?.merged, ['lib/a.txt']);
    assert.equal(client.cat('p', 'lib/a.txt').toString(), edit(edit(TEXT, 1, 'one by shared'), 20, 'twenty by other'));
    assert.equal(client.cat('p', 'other.txt').toString(), 'other\n');
    // A later commit of 'other' is reconciled again (its Layer held more than its Commit).
    writeFileSync(join(w3.path, 'other.txt'), 'other 2\n');
    assert.equal((await client.commitWorkspace(w3.id)).outcome, 'Created');
    assert.equal(client.add('other').outcome, 'Added');
    assert.equal(client.cat('p', 'lib/a.txt').toString(), edit(edit(TEXT, 1, 'one by shared'), 20, 'twenty by other'));
    assert.equal(client.cat('p', 'other.txt').toString(), 'other 2\n');

    // 'shared' (w2) edits line 20 too: its commit merges with w1's, its add conflicts with 'other'.
    writeFileSync(join(w2.path, 'lib/a.txt'), edit(TEXT, 20, 'twenty by w2'));
    writeFileSync(join(w2.path, 'w2.txt'), 'w2\n');
    assert.equal((await client.commitWorkspace(w2.id)).outcome, 'Created');
    const layers = client.layers({ layerStack: 'p' }).length;
    const c = client.add('shared');
    assert.equal(c.outcome, 'Conflicted');
    if (c.outcome !== 'Conflicted') return;
    assert.equal(client.layers({ layerStack: 'p' }).length, layers);
    const rw = c.resolutionWorkspace;
    assert.deepEqual(c.conflicts.map((x) => `${x.kind} ${x.path}`), ['text lib/a.txt']);
    assert.equal(readFileSync(join(rw.path, 'w2.txt'), 'utf8'), 'w2\n');
    assert.equal(readFileSync(join(rw.path, 'other.txt'), 'utf8'), 'other 2\n');
    client.resolveWorkspaceConflict(rw.id, c.conflicts[0]!.id, 'working-tree');
    assert.equal(readFileSync(join(rw.path, 'lib/a.txt'), 'utf8'), edit(edit(TEXT, 1, 'one by shared'), 20, 'twenty by w2'));
    writeFileSync(join(rw.path, 'lib/a.txt'), edit(edit(TEXT, 1, 'one by shared'), 20, 'twenty by both'));
    assert.equal((await client.commitWorkspace(rw.id)).outcome, 'Created');
    const done = client.add(rw.branch);
    assert.equal(done.outcome, 'Added');
    assert.equal(client.cat('p', 'lib/a.txt').toString(), edit(edit(TEXT, 1, 'one by shared'), 20, 'twenty by both'));
    assert.equal(client.cat('p', 'w2.txt').toString(), 'w2\n');
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('Branches forked from one Commit add from that Commit: an edit they inherited is no change of the second', async () => {
  const { dir, client, w1, w2 } = await setup();
  try {
    writeFileSync(join(w1.path, 'lib/a.txt'), edit(TEXT, 1, 'one by trunk'));
    const trunk = await client.commitWorkspace(w1.id);
    assert.equal(trunk.outcome, 'Created');
    if (trunk.outcome !== 'Created') return;
    client.forkBranch({ name: 'x', branch: 'shared', commit: trunk.commit.id });
    client.forkBranch({ name: 'y', branch: 'shared', commit: trunk.commit.id });
    const wx = await client.createWorkspace('x', { at: join(dir, 'wx'), projection: 'materialize' });
    const wy = await client.createWorkspace('y', { at: join(dir, 'wy'), projection: 'materialize' });
    // x edits the line trunk edited again; y leaves it as trunk made it and edits another file.
    writeFileSync(join(wx.path, 'lib/a.txt'), edit(TEXT, 1, 'one by x'));
    writeFileSync(join(wy.path, 'lib/b.txt'), 'b by y\n');
    assert.equal((await client.commitWorkspace(wx.id)).outcome, 'Created');
    assert.equal((await client.commitWorkspace(wy.id)).outcome, 'Created');
    assert.equal(client.add('x').outcome, 'Added');
    const added = client.add('y');
    assert.equal(added.outcome, 'Added', JSON.stringify(added.outcome === 'Conflicted' ? added.conflicts : added));
    assert.equal(client.cat('p', 'lib/a.txt').toString(), edit(TEXT, 1, 'one by x'));
    assert.equal(client.cat('p', 'lib/b.txt').toString(), 'b by y\n');
    for (const w of [wx, wy, w2]) await client.endWorkspace(w.id, { discard: true });
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('a format-8 Store is upgraded: conflicts are recorded and listed afterwards', async () => {
  const { dir, client, w1, w2 } = await setup();
  client.close();
  const path = join(dir, 'store.sqlite');
  const db = new Database(path);
  asFormat(db, 8);
  assert.equal((db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'workspace_conflicts'").get() as { n: number }).n, 0);
  db.close();
  const c = Client.connect(path);
  try {
    assert.equal(c.info().formatVersion, FORMAT_VERSION);
    writeFileSync(join(w1.path, 'data.bin'), seededBytes(8, 4096));
    writeFileSync(join(w2.path, 'data.bin'), seededBytes(9, 4096));
    assert.equal((await c.commitWorkspace(w1.id)).outcome, 'Created');
    assert.equal((await c.commitWorkspace(w2.id)).outcome, 'Conflicted');
    assert.deepEqual(c.workspaceConflicts(w2.id).map((x) => x.kind), ['binary']);
    assertIntact(c);
  } finally {
    c.close();
  }
});
