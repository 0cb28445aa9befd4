// The SDK as a user meets it: one Client, its methods end to end on a real Store and a real
// directory (create → initLayerStack → forkBranch → createWorkspace → exec → workspaceStatus →
// commitWorkspace → log / diff / cat → endWorkspace), and the typed LayerFsError of each misuse:
// a stable code, the offending name or path, a hint, and nothing lost.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, isLayerFsError, type ErrorCode } from '../../lib/sdk/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

function source(dir: string): string {
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib'), { recursive: true });
  writeFileSync(join(src, 'README'), 'readme\n');
  writeFileSync(join(src, 'lib/a.txt'), 'a\n');
  writeFileSync(join(src, 'data.bin'), seededBytes(14, 200_000));
  return src;
}

async function store() {
  const dir = tempDir();
  const src = source(dir);
  const path = join(dir, 'store.layerfs');
  const client = Client.create(path);
  const init = await client.initLayerStack({ name: 'proj', source: src });
  return { dir, src, path, client, layer: init.layer.id };
}

/**
 * Asserts `fn` throws a LayerFsError with `code` that names what it refused and, unless `hinted`
 * is false (the errors listed with it below still give none), says what to do.
 */
async function refuses(fn: () => unknown, code: ErrorCode, names?: string, hinted = true): Promise<void> {
  let thrown: unknown;
  try {
    await fn();
  } catch (e) {
    thrown = e;
  }
  assert.ok(thrown !== undefined, `expected ${code}, nothing was thrown`);
  assert.ok(isLayerFsError(thrown), `expected a LayerFsError ${code}, got ${String(thrown)}`);
  assert.equal(thrown.code, code, thrown.message);
  if (names !== undefined) assert.ok(thrown.message.includes(names) || JSON.stringify(thrown.details).includes(names), `${code} does not name ${names}: ${thrown.message}`);
  if (hinted) assert.ok(typeof thrown.details.hint === 'string' && thrown.details.hint.length > 0, `${code} gives no hint: ${thrown.message}`);
}

test('one Client end to end: import, fork, Workspace, exec, status, commit, log, diff, cat, end', async () => {
  const { dir, client, layer } = await store();
  try {
    assert.deepEqual(client.layerStacks().map((s) => s.name), ['proj']);
    const branch = client.forkBranch({ name: 'work', layer });
    assert.equal(branch.headCommitId, null);
    assert.deepEqual(client.log('work'), []);

    const at = join(dir, 'ws');
    const ws = await client.createWorkspace('work', { at });
    assert.equal(readFileSync(join(at, 'lib/a.txt'), 'utf8'), 'a\n');
    assert.deepEqual(readFileSync(join(at, 'data.bin')), seededBytes(14, 200_000));
    assert.equal((await client.workspaceStatus(ws.id)).clean, true);

    // A command run in the Workspace changes it; the execution records how it ended.
    const ran = await client.exec(ws.id, ['sh', '-c', 'echo made > made.txt && rm README']);
    assert.equal(ran.state, 'exited');
    assert.equal(ran.exitCode, 0);
    const failed = await client.exec(ws.id, ['sh', '-c', 'exit 3']);
    assert.equal(failed.exitCode, 3);
    const st = await client.workspaceStatus(ws.id);
    assert.equal(st.clean, false);
    assert.deepEqual(Object.fromEntries(st.changes.map((c) => [c.path, c.change])), { 'made.txt': 'added', README: 'deleted' });

    const c1 = await client.commitWorkspace(ws.id, { message: 'made' });
    assert.equal(c1.outcome, 'Created');
    if (c1.outcome !== 'Created') return;
    assert.ok(c1.changedPaths >= 2, `changedPaths ${c1.changedPaths}`);
    assert.equal((await client.workspaceStatus(ws.id)).clean, true);
    assert.equal((await client.commitWorkspace(ws.id)).outcome, 'UpToDate');
    assert.deepEqual(client.log('work').map((c) => c.id), [c1.commit.id]);
    assert.equal(client.branch('work').headCommitId, c1.commit.id);

    // The Commit is readable without the Workspace: diff against the Layer, cat, stat.
    const diff = client.diff(layer, 'work');
    assert.equal(diff.total, 2);
    assert.deepEqual(Object.fromEntries(diff.entries.map((e) => [e.path, e.change])), { 'made.txt': 'added', README: 'deleted' });
    assert.equal(client.cat('work', 'made.txt').toString(), 'made\n');
    assert.equal(client.cat(c1.commit.id, 'lib/a.txt').toString(), 'a\n');
    // No hint yet: a path missing from a state.
    await refuses(() => client.cat('work', 'README'), 'ERR_NOT_FOUND', 'README', false);

    const end = await client.endWorkspace(ws.id);
    assert.equal(end.outcome, 'Ended');
    assert.equal(existsSync(at), false);
    await refuses(() => client.workspaceStatus(ws.id), 'ERR_NOT_FOUND');
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('a reconnected Client sees every state the first one made', async () => {
  const { dir, path, client, layer } = await store();
  client.forkBranch({ name: 'work', layer });
  const ws = await client.createWorkspace('work', { at: join(dir, 'ws') });
  writeFileSync(join(ws.path, 'new.txt'), 'new\n');
  const c1 = await client.commitWorkspace(ws.id);
  assert.equal(c1.outcome, 'Created');
  client.close();

  const again = Client.connect(path);
  try {
    assert.equal(again.log('work').length, 1);
    assert.equal(again.cat('work', 'new.txt').toString(), 'new\n');
    assert.deepEqual(again.workspaces().map((w) => w.id), [ws.id]);
    writeFileSync(join(ws.path, 'new.txt'), 'newer\n');
    assert.equal((await again.commitWorkspace(ws.id)).outcome, 'Created');
    assert.equal(again.log('work').length, 2);
    assertIntact(again);
    const ro = Client.connect(path, { readonly: true });
    try {
      assert.equal(ro.cat('work', 'new.txt').toString(), 'newer\n');
      await refuses(() => ro.forkBranch({ name: 'nope', layer }), 'ERR_READ_ONLY');
    } finally {
      ro.close();
    }
    // A mapped read-only connection reads the same bytes, streamed; mapped needs readonly.
    const mapped = Client.connect(path, { readonly: true, mapped: true });
    try {
      assert.equal(Buffer.concat([...mapped.readFile('work', 'new.txt')]).toString(), 'newer\n');
      await refuses(() => mapped.forkBranch({ name: 'nope', layer }), 'ERR_READ_ONLY');
    } finally {
      mapped.close();
    }
    await refuses(() => Client.connect(path, { mapped: true }), 'ERR_INVALID_ARGUMENT');
  } finally {
    again.close();
  }
});

test('typed errors: Stores, names and refs', async () => {
  const { dir, path, src, client, layer } = await store();
  try {
    await refuses(() => Client.create(path), 'ERR_EXISTS', path);
    const notStore = join(dir, 'not-a-store');
    writeFileSync(notStore, 'hello, not SQLite at all'.repeat(100));
    // No hint yet: a file that is not SQLite at all.
    await refuses(() => Client.connect(notStore), 'ERR_NOT_A_STORE', notStore, false);

    await refuses(() => client.initLayerStack({ name: 'proj', source: src }), 'ERR_NAME_TAKEN', 'proj');
    await refuses(() => client.initLayerStack({ name: 'bad/name', source: src }), 'ERR_INVALID_NAME', 'bad/name');
    // No hint yet: a source directory that does not exist.
    await refuses(() => client.initLayerStack({ name: 'other', source: join(dir, 'missing') }), 'ERR_NOT_FOUND', 'missing', false);

    await refuses(() => client.createWorkspace('no-such-branch', { at: join(dir, 'x') }), 'ERR_NOT_FOUND', 'no-such-branch');
    client.forkBranch({ name: 'work', layer });
    const busy = join(dir, 'busy');
    mkdirSync(busy);
    writeFileSync(join(busy, 'keep.txt'), 'mine\n');
    await refuses(() => client.createWorkspace('work', { at: busy }), 'ERR_NOT_EMPTY', busy);
    assert.equal(readFileSync(join(busy, 'keep.txt'), 'utf8'), 'mine\n', 'a refused Workspace leaves the directory alone');

    await refuses(() => client.diff(layer, 'no-such-ref'), 'ERR_NOT_FOUND', 'no-such-ref');
    await refuses(() => client.log('no-such-branch'), 'ERR_NOT_FOUND', 'no-such-branch');
    await refuses(() => client.commitWorkspace(join(dir, 'nowhere')), 'ERR_NOT_FOUND');
    await refuses(() => client.exec('ffffffffffffffffffffffffffffffff', ['true']), 'ERR_NOT_FOUND');
    // Nothing above changed the Store.
    assert.deepEqual(client.layerStacks().map((s) => s.name), ['proj']);
    assert.deepEqual(client.branches().map((b) => b.name), ['work']);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('ending a dirty Workspace answers Dirty and keeps the changes; discard ends it', async () => {
  const { dir, client, layer } = await store();
  try {
    client.forkBranch({ name: 'work', layer });
    const ws = await client.createWorkspace('work', { at: join(dir, 'ws') });
    writeFileSync(join(ws.path, 'unsaved.txt'), 'unsaved\n');
    const dirty = await client.endWorkspace(ws.id);
    assert.equal(dirty.outcome, 'Dirty');
    assert.equal(readFileSync(join(ws.path, 'unsaved.txt'), 'utf8'), 'unsaved\n');
    assert.equal(client.workspace(ws.id).id, ws.id);
    const ended = await client.endWorkspace(ws.id, { discard: true });
    assert.equal(ended.outcome, 'Ended');
    assert.deepEqual(client.log('work'), [], 'discarded changes are not committed');
    assertIntact(client);
  } finally {
    client.close();
  }
});
