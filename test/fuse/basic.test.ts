// Basic POSIX operations through a real mount served by the daemon, a commit while mounted, and
// a fresh mount of the Commit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, link, mkdir, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { commitFuse, daemonStatus, stopDaemon, unmountWorkspace } from '../../lib/fuse/index.js';
import { mountBranch, setupStore, walk, withMount } from './helpers.js';
import { fillBasic, posixScenario } from './scenarios.js';

test('files, directories, links, modes, xattrs and errors through the mount', async () => {
  const s = await setupStore(fillBasic);
  await withMount(s, (m) => posixScenario(m));
});

test('commit while mounted, continue from the Commit, fresh mount equals, inode numbers stay', async () => {
  const s = await setupStore(fillBasic);
  const first = await mountBranch(s);
  let expected;
  try {
    const m = first.path;
    await writeFile(join(m, 'new.txt'), 'new\n');
    await mkdir(join(m, 'empty'));
    await rename(join(m, 'lib/deep/b.txt'), join(m, 'b-moved.txt'));
    await rm(join(m, 'link'));
    await symlink('new.txt', join(m, 'link'));
    await link(join(m, 'new.txt'), join(m, 'lib/new-hard'));
    await chmod(join(m, 'big.bin'), 0o600);
    const inoBefore = (await stat(join(m, 'b-moved.txt'))).ino;
    const st = await daemonStatus(s.storePath);
    assert.equal(st?.mounts[0]?.dirty, true);

    const c1 = await commitFuse(s.storePath, first.workspaceId);
    assert.equal(c1.outcome, 'Created');
    assert.equal(s.client.branch('main').headCommitId, c1.outcome === 'Created' ? c1.commitId : null);
    assert.equal((await commitFuse(s.storePath, first.workspaceId)).outcome, 'UpToDate');
    assert.equal((await stat(join(m, 'b-moved.txt'))).ino, inoBefore);
    assert.equal((await daemonStatus(s.storePath))?.mounts[0]?.dirty, false);

    // The Workspace continues from the new Commit.
    await writeFile(join(m, 'lib/a.txt'), 'a v2\n');
    const c2 = await commitFuse(s.storePath, first.workspaceId);
    assert.equal(c2.outcome, 'Created');
    if (c2.outcome === 'Created' && c1.outcome === 'Created') assert.equal(c2.previousHead, c1.commitId);
    assert.equal(s.client.log('main').length, 2);
    expected = await walk(m);

    // A second mount of the same Branch sees the Commit.
    const second = await mountBranch(s);
    try {
      assert.deepEqual(await walk(second.path), expected);
      assert.equal((await stat(join(second.path, 'b-moved.txt'))).ino, inoBefore);
      const st2 = await daemonStatus(s.storePath);
      assert.equal(st2?.mounts.length, 2);
      assert.equal(st2?.pid, first.daemonPid);
    } finally {
      assert.equal((await unmountWorkspace(s.storePath, second.workspaceId)).outcome, 'Unmounted');
    }
    // Uncommitted changes make unmount refuse unless discarded.
    await writeFile(join(m, 'scratch'), 'x');
    assert.equal((await unmountWorkspace(s.storePath, first.workspaceId)).outcome, 'Dirty');
  } finally {
    await unmountWorkspace(s.storePath, first.workspaceId, { discard: true }).catch(() => {});
    await stopDaemon(s.storePath, { discard: true });
  }
  // The daemon exited with its last mount; the export of the head equals the mounted tree.
  assert.equal(await daemonStatus(s.storePath), null);
  const out = join(s.dir, 'export');
  s.client.export(s.client.branch('main').headCommitId!, out);
  assert.deepEqual(await walk(out), expected);
  assert.equal(s.client.verify().ok, true);
});
