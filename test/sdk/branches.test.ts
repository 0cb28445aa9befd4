// Branches and Add through the SDK: fork from a Layer and from a Commit of another Branch, Add
// (publish a Branch head as the LayerStack's next Layer; its refusals), rename, delete, and the
// typed errors of each. Every mutating test ends with the Store's integrity check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, isLayerFsError, type ErrorCode } from '../../lib/sdk/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';

async function store() {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  writeFileSync(join(src, 'a.txt'), 'a\n');
  writeFileSync(join(src, 'd/b.txt'), 'b\n');
  const client = Client.create(join(dir, 'store.layerfs'));
  const init = await client.initLayerStack({ name: 'proj', source: src });
  return { dir, client, layer: init.layer.id };
}

/** A Workspace on `branch` that writes `files` and commits them; returns the new Commit's id. */
async function commitFiles(client: Client, dir: string, branch: string, files: Record<string, string>): Promise<string> {
  const ws = client.workspaces({ branch })[0] ?? (await client.createWorkspace(branch, { at: join(dir, `ws-${branch}`) }));
  for (const [p, text] of Object.entries(files)) writeFileSync(join(ws.path, p), text);
  const r = await client.commitWorkspace(ws.id);
  assert.equal(r.outcome, 'Created');
  if (r.outcome !== 'Created') throw new Error('unreachable');
  return r.commit.id;
}

function code(fn: () => unknown): ErrorCode | undefined {
  try {
    fn();
  } catch (e) {
    assert.ok(isLayerFsError(e), `expected a LayerFsError, got ${String(e)}`);
    assert.ok(typeof e.details.hint === 'string' && e.details.hint.length > 0, `${e.code} gives no hint: ${e.message}`);
    return e.code;
  }
  return undefined;
}

test('fork from a Layer and from a Commit of another Branch', async () => {
  const { dir, client, layer } = await store();
  try {
    const a = client.forkBranch({ name: 'a', layer });
    assert.equal(a.headCommitId, null);
    assert.equal(client.cat('a', 'a.txt').toString(), 'a\n', 'a fresh Branch shows its Layer');
    const c1 = await commitFiles(client, dir, 'a', { 'a.txt': 'a1\n' });
    const c2 = await commitFiles(client, dir, 'a', { 'a.txt': 'a2\n' });

    const b = client.forkBranch({ name: 'b', branch: 'a', commit: c1 });
    assert.equal(b.headCommitId, c1);
    assert.equal(client.cat('b', 'a.txt').toString(), 'a1\n');
    assert.deepEqual(client.log('b').map((c) => c.id), [c1], 'b starts with the history up to the fork');
    const c3 = await commitFiles(client, dir, 'b', { 'new.txt': 'from b\n' });
    assert.deepEqual(client.log('b').map((c) => c.id), [c3, c1]);
    assert.deepEqual(client.log('a').map((c) => c.id), [c2, c1], 'a is untouched by b');
    assert.deepEqual(client.branches().map((x) => x.name).sort(), ['a', 'b']);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('fork refuses a taken name, a bad name and unknown sources, and changes nothing', async () => {
  const { dir, client, layer } = await store();
  try {
    client.forkBranch({ name: 'a', layer });
    const c1 = await commitFiles(client, dir, 'a', { 'a.txt': 'a1\n' });
    assert.equal(code(() => client.forkBranch({ name: 'a', layer })), 'ERR_NAME_TAKEN');
    assert.equal(code(() => client.forkBranch({ name: 'has space/slash', layer })), 'ERR_INVALID_NAME');
    assert.equal(code(() => client.forkBranch({ name: 'x', layer: 'no-such-layer' })), 'ERR_NOT_FOUND');
    assert.equal(code(() => client.forkBranch({ name: 'x', branch: 'no-such-branch', commit: c1 })), 'ERR_NOT_FOUND');
    assert.equal(code(() => client.forkBranch({ name: 'x', branch: 'a', commit: 'ffffffffffffffff' })), 'ERR_NOT_FOUND');
    assert.deepEqual(client.branches().map((x) => x.name), ['a']);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('add publishes the head as the next Layer; then UpToDate; a stale expected head is HeadMoved', async () => {
  const { dir, client, layer } = await store();
  try {
    client.forkBranch({ name: 'a', layer });
    const empty = client.add('a');
    assert.equal(empty.outcome, 'NoChanges', 'a Branch without Commits has nothing to add');
    await commitFiles(client, dir, 'a', { 'a.txt': 'from a\n' });
    const layersBefore = client.layers({ layerStack: 'proj' }).length;

    const added = client.add('a', { expectedHead: layer });
    assert.equal(added.outcome, 'Added');
    if (added.outcome !== 'Added') return;
    assert.equal(added.previousHead, layer);
    assert.equal(client.layers({ layerStack: 'proj' }).length, layersBefore + 1);
    assert.equal(client.cat(added.layer.id, 'a.txt').toString(), 'from a\n');
    assert.equal(client.cat('proj', 'a.txt').toString(), 'from a\n', 'the LayerStack reads its new head');
    assert.equal(client.add('a').outcome, 'UpToDate');

    // b forked from the old head: with the old head expected, Add refuses and publishes nothing.
    client.forkBranch({ name: 'b', layer });
    await commitFiles(client, dir, 'b', { 'd/b.txt': 'from b\n' });
    const stale = client.add('b', { expectedHead: layer });
    assert.equal(stale.outcome, 'HeadMoved');
    if (stale.outcome === 'HeadMoved') assert.equal(stale.actual, added.layer.id);
    assert.equal(client.layers({ layerStack: 'proj' }).length, layersBefore + 1);
    assert.equal(client.add('b', { strict: true }).outcome, 'HeadMoved');

    // Without strict, b's change (another file) is reconciled onto the new head.
    const merged = client.add('b');
    assert.equal(merged.outcome, 'Added');
    assert.equal(client.cat('proj', 'a.txt').toString(), 'from a\n');
    assert.equal(client.cat('proj', 'd/b.txt').toString(), 'from b\n');
    assert.equal(code(() => client.add('no-such-branch')), 'ERR_NOT_FOUND');
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('rename keeps the history under the new name; taken, bad and unknown names are refused', async () => {
  const { dir, client, layer } = await store();
  try {
    client.forkBranch({ name: 'a', layer });
    client.forkBranch({ name: 'other', layer });
    const c1 = await commitFiles(client, dir, 'a', { 'a.txt': 'a1\n' });
    const r = client.renameBranch('a', 'renamed');
    assert.equal(r.outcome, 'Renamed');
    assert.equal(r.previousName, 'a');
    assert.equal(r.branch.name, 'renamed');
    assert.deepEqual(client.log('renamed').map((c) => c.id), [c1]);
    assert.equal(code(() => client.branch('a')), 'ERR_NOT_FOUND');
    assert.equal(code(() => client.renameBranch('renamed', 'other')), 'ERR_NAME_TAKEN');
    assert.equal(code(() => client.renameBranch('renamed', 'bad/name')), 'ERR_INVALID_NAME');
    assert.equal(code(() => client.renameBranch('no-such-branch', 'x')), 'ERR_NOT_FOUND');
    // Its Workspace follows the rename: commits land on the renamed Branch.
    await commitFiles(client, dir, 'renamed', { 'a.txt': 'a2\n' });
    assert.equal(client.log('renamed').length, 2);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('delete: a dirty Workspace stops it unless discarded; the name is then free; unknown names are refused', async () => {
  const { dir, client, layer } = await store();
  try {
    client.forkBranch({ name: 'a', layer });
    const head = await commitFiles(client, dir, 'a', { 'a.txt': 'a1\n' });
    const ws = client.workspaces({ branch: 'a' })[0]!;
    writeFileSync(join(ws.path, 'unsaved.txt'), 'unsaved\n');

    const dirty = await client.deleteBranch('a', { force: true });
    assert.equal(dirty.outcome, 'Dirty');
    assert.equal(client.branch('a').headCommitId, head, 'a refused delete keeps the Branch');

    const deleted = await client.deleteBranch('a', { force: true, discard: true });
    assert.equal(deleted.outcome, 'Deleted');
    if (deleted.outcome !== 'Deleted') return;
    assert.equal(deleted.head, head);
    assert.deepEqual(deleted.workspacesEnded, [ws.id]);
    assert.equal(code(() => client.branch('a')), 'ERR_DELETED', 'a deleted Branch says so');
    assert.ok(client.deleted().some((d) => d.name === 'a'), 'the deleted Branch is listed as deleted');
    assert.equal(client.forkBranch({ name: 'a', layer }).headCommitId, null, 'the name can be used again');

    let missing: unknown;
    try {
      await client.deleteBranch('no-such-branch');
    } catch (e) {
      missing = e;
    }
    assert.ok(isLayerFsError(missing, 'ERR_NOT_FOUND'));
    assertIntact(client);
  } finally {
    client.close();
  }
});
