import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { walkForCompare } from '../helpers/treewalk.js';
import { assertIntact } from '../helpers/integrity.js';

async function setup() {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib/deep'), { recursive: true });
  writeFileSync(join(src, 'README'), 'readme\n');
  writeFileSync(join(src, 'lib/a.txt'), 'a\n');
  writeFileSync(join(src, 'lib/deep/b.txt'), 'b\n');
  writeFileSync(join(src, 'big.bin'), seededBytes(5, 600_000));
  symlinkSync('README', join(src, 'link'));
  const client = Client.create(join(dir, 'store.sqlite'));
  const init = await client.initLayerStack({ name: 'proj', source: src });
  return { dir, src, client, layer: init.layer.id };
}

test('fork, materialize, edit, commit, log, fork from an older Commit, add', async () => {
  const { dir, client, layer } = await setup();
  try {
    const b = client.forkBranch({ name: 'try-a', layer });
    assert.equal(b.headCommitId, null);
    const at = join(dir, 'ws-a');
    const ws = await client.createWorkspace('try-a', { at });
    assert.equal(readFileSync(join(at, 'lib/a.txt'), 'utf8'), 'a\n');
    assert.equal((await client.workspaceStatus(ws.id)).clean, true);
    assert.equal((await client.commitWorkspace(ws.id)).outcome, 'UpToDate');

    writeFileSync(join(at, 'lib/a.txt'), 'a changed\n');
    writeFileSync(join(at, 'new.txt'), 'new\n');
    unlinkSync(join(at, 'README'));
    renameSync(join(at, 'lib/deep/b.txt'), join(at, 'b-moved.txt'));
    chmodSync(join(at, 'big.bin'), 0o600);
    rmSync(join(at, 'link'));
    symlinkSync('new.txt', join(at, 'link'));
    mkdirSync(join(at, 'empty'));
    linkSync(join(at, 'new.txt'), join(at, 'lib/new-hard'));
    const st = await client.workspaceStatus(ws.id);
    const byPath = Object.fromEntries(st.changes.map((c) => [c.path, c.change]));
    assert.equal(byPath['lib/a.txt'], 'modified');
    assert.equal(byPath['new.txt'], 'added');
    assert.equal(byPath['README'], 'deleted');
    assert.equal(byPath['b-moved.txt'], 'renamed');
    assert.equal(byPath['empty'], 'added');

    const c1 = await client.commitWorkspace(at);
    assert.equal(c1.outcome, 'Created');
    if (c1.outcome !== 'Created') return;
    assert.equal((await client.workspaceStatus(ws.id)).clean, true);
    assert.equal((await client.commitWorkspace(ws.id)).outcome, 'UpToDate');
    // The committed state equals the directory, field by field.
    const out = join(dir, 'export-c1');
    client.export(c1.commit.id, out);
    assert.deepEqual(walkForCompare(out).slice(1), walkForCompare(at).slice(1));
    assert.equal(client.stat(c1.commit.id, 'lib/new-hard').nlink, 2);

    writeFileSync(join(at, 'lib/a.txt'), 'second\n');
    const c2 = await client.commitWorkspace(ws.id);
    assert.equal(c2.outcome, 'Created');
    assert.deepEqual(client.log('try-a').map((c) => c.id), [c2.outcome === 'Created' ? c2.commit.id : '', c1.commit.id]);
    assert.equal(client.cat('try-a', 'lib/a.txt').toString(), 'second\n');
    assert.equal(client.cat(c1.commit.id, 'lib/a.txt').toString(), 'a changed\n');

    // Go back: a new Branch continues from the older Commit.
    const back = client.forkBranch({ name: 'try-b', branch: 'try-a', commit: c1.commit.id.slice(0, 10) });
    assert.equal(back.headCommitId, c1.commit.id);
    assert.equal(client.cat('try-b', 'lib/a.txt').toString(), 'a changed\n');

    const added = client.add('try-a');
    assert.equal(added.outcome, 'Added');
    assert.equal(client.add('try-a').outcome, 'UpToDate');
    // try-b forked before the Add from the same base: adding it would drop try-a's Layer.
    writeFileSync(join(dir, 'unused'), '');
    const wsB = await client.createWorkspace('try-b', { at: join(dir, 'ws-b') });
    writeFileSync(join(wsB.path, 'b-only'), 'b');
    assert.equal((await client.commitWorkspace(wsB.id)).outcome, 'Created');
    const moved = client.add('try-b', { strict: true });
    assert.equal(moved.outcome, 'HeadMoved');
    assert.equal(client.layers({ layerStack: 'proj' }).length, 2);
    assert.equal(client.cat('proj', 'lib/a.txt').toString(), 'second\n');

    assert.equal((await client.endWorkspace(ws.id)).outcome, 'Ended');
    assert.equal(existsSync(at), false);
    writeFileSync(join(wsB.path, 'dirty'), 'x');
    assert.equal((await client.endWorkspace(wsB.id)).outcome, 'Dirty');
    assert.equal((await client.endWorkspace(wsB.id, { discard: true })).outcome, 'Ended');
    assert.equal(existsSync(wsB.path), false);
    assert.deepEqual(client.workspaces(), []);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('strict: two Workspaces on one Branch: the second commit gets HeadMoved and loses nothing', async () => {
  const { dir, client, layer } = await setup();
  try {
    client.forkBranch({ name: 'shared', layer });
    const w1 = await client.createWorkspace('shared', { at: join(dir, 'w1') });
    const w2 = await client.createWorkspace('shared', { at: join(dir, 'w2') });
    writeFileSync(join(w1.path, 'one'), '1');
    writeFileSync(join(w2.path, 'two'), '2');
    const r1 = await client.commitWorkspace(w1.id);
    assert.equal(r1.outcome, 'Created');
    const r2 = await client.commitWorkspace(w2.id, { strict: true });
    assert.equal(r2.outcome, 'HeadMoved');
    if (r2.outcome === 'HeadMoved' && r1.outcome === 'Created') {
      assert.equal(r2.expected, null);
      assert.equal(r2.actual, r1.commit.id);
    }
    assert.equal(readFileSync(join(w2.path, 'two'), 'utf8'), '2');
    assert.equal(client.log('shared').length, 1);
    assert.equal((await client.workspaceStatus(w2.id)).clean, false);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('a Workspace whose directory was deleted can still be ended with --discard', async () => {
  const { dir, client, layer } = await setup();
  try {
    client.forkBranch({ name: 'gone', layer });
    const w = await client.createWorkspace('gone', { at: join(dir, 'gone') });
    rmSync(w.path, { recursive: true });
    assert.equal((await client.endWorkspace(w.id)).outcome, 'Dirty');
    await assert.rejects(client.commitWorkspace(w.id), { code: 'ERR_NOT_FOUND' });
    assert.equal((await client.endWorkspace(w.id, { discard: true })).outcome, 'Ended');
    await assert.rejects(async () => client.createWorkspace('gone', { at: join(dir, 'src') }), { code: 'ERR_NOT_EMPTY' });
    assert.throws(() => client.forkBranch({ name: 'gone', layer }), { code: 'ERR_NAME_TAKEN' });
    assert.throws(() => client.forkBranch({ name: 'Bad!', layer }), { code: 'ERR_INVALID_NAME' });
    assertIntact(client);
  } finally {
    client.close();
  }
});
