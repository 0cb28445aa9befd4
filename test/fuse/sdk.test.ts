// FUSE Workspaces through the SDK: createWorkspace({ projection: 'fuse' }), files written by
// child processes in the mount, workspaceStatus per path, commitWorkspace while mounted
// (Created then UpToDate; the Workspace continues from the new Commit), endWorkspace refusing
// uncommitted changes and with discard, daemonStatus/stopDaemon, and a lost Workspace after the
// daemon is SIGKILLed, ended with discard. This process only reaches the mount through child
// processes (it never reads or writes into it itself).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { detachStale, fuseAvailable } from '../../lib/fuse/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { alive, mounted } from '../helpers/process-gone.js';
import { ok, run, setupStore, type StoreSetup } from './helpers.js';

const skip = !fuseAvailable().ok ? `FUSE is not usable here: ${fuseAvailable().reason}` : process.getuid?.() !== 0 ? 'needs root (kernel backend)' : false;

/** The imported source tree (a plain directory, not a mount). */
function fill(src: string): void {
  writeFileSync(join(src, 'a.txt'), 'one\n');
  writeFileSync(join(src, 'old.txt'), 'moved\n');
  writeFileSync(join(src, 'gone.txt'), 'bye\n');
}

const sh = (cwd: string, script: string) => ok('sh', ['-c', script], { cwd });

async function finish(s: StoreSetup, paths: string[]): Promise<void> {
  await s.client.stopDaemon({ discard: true }).catch(() => {});
  for (const p of paths) await detachStale(p).catch(() => false);
}

test('SDK: a FUSE Workspace: status per path, commit while mounted, continue, end refusing changes, end with discard', { skip, timeout: 120_000 }, async () => {
  const s = await setupStore(fill);
  const at = join(s.dir, 'ws');
  try {
    const ws = await s.client.createWorkspace('main', { at, projection: 'fuse' });
    assert.equal(ws.projection, 'fuse');
    assert.equal(ws.state, 'mounted');
    assert.equal(s.client.workspaces()[0]!.state, 'mounted');
    assert.equal((await s.client.workspaceStatus(ws.id)).clean, true);

    await sh(at, 'echo two >> a.txt && mkdir d && echo x > d/b.txt && mv old.txt new.txt && rm gone.txt');
    const st = await s.client.workspaceStatus(ws.id);
    assert.deepEqual(
      st.changes.map((c) => `${c.change} ${c.oldPath ? `${c.oldPath} -> ` : ''}${c.path}`),
      ['modified a.txt', 'added d', 'added d/b.txt', 'deleted gone.txt', 'renamed old.txt -> new.txt'],
    );

    const c1 = await s.client.commitWorkspace(ws.id);
    assert.equal(c1.outcome, 'Created');
    if (c1.outcome !== 'Created') return;
    assert.deepEqual(s.client.log('main')[0], c1.commit, 'the Commit from the daemon reply is the stored row');
    // The daemon reports its own write transaction's growth in whole SQLite pages (8 KiB), and a
    // Commit of a few small files allocates at most a few of them (0 when they fit in free space).
    assert.ok(Number.isInteger(c1.allocatedGrowth / 8192) && c1.allocatedGrowth >= 0 && c1.allocatedGrowth <= 16 * 8192, `allocatedGrowth ${c1.allocatedGrowth}`);
    assert.equal((await s.client.commitWorkspace(ws.id)).outcome, 'UpToDate');
    assert.equal((await s.client.workspaceStatus(ws.id)).clean, true);
    assert.equal(s.client.cat('main', 'a.txt').toString(), 'one\ntwo\n');
    assert.equal(s.client.workspace(ws.id).expectedHeadId, c1.commit.id);

    // The Workspace continues from the new Commit.
    await sh(at, 'echo three >> a.txt');
    const c2 = await s.client.commitWorkspace(ws.id);
    assert.equal(c2.outcome, 'Created');
    if (c2.outcome !== 'Created') return;
    assert.equal(c2.commit.parentCommitId, c1.commit.id);
    assert.equal(s.client.cat('main', 'a.txt').toString(), 'one\ntwo\nthree\n');

    // Busy while an execution runs in the mount (its cwd).
    const ex = s.client.execDetached(ws.id, ['sh', '-c', 'pwd > where.txt; sleep 60']);
    assert.equal((await s.client.commitWorkspace(ws.id)).outcome, 'Busy');
    while ((await run('test', ['-s', join(at, 'where.txt')])).code !== 0) await sleep(50);
    await s.client.stopExecution(ex.id);
    assert.equal((await ok('cat', [join(at, 'where.txt')])).trim(), at);

    const dirty = await s.client.endWorkspace(ws.id);
    assert.equal(dirty.outcome, 'Dirty');
    const ended = await s.client.endWorkspace(ws.id, { discard: true });
    assert.equal(ended.outcome, 'Ended');
    assert.equal(await mounted(at), false);
    assert.deepEqual(s.client.workspaces(), []);
    // The daemon exits with its last Workspace.
    const deadline = Date.now() + 20_000;
    while ((await s.client.daemonStatus()) && Date.now() < deadline) await sleep(100);
    assert.equal(await s.client.daemonStatus(), null);
    assertIntact(s.client);
  } finally {
    await finish(s, [at]);
    s.client.close();
  }
});

test('SDK: daemonStatus/stopDaemon; a Workspace lost to a SIGKILLed daemon ends with discard', { skip, timeout: 120_000 }, async () => {
  const s = await setupStore(fill);
  const a = join(s.dir, 'ws-a');
  const b = join(s.dir, 'ws-b');
  try {
    const wa = await s.client.createWorkspace('main', { at: a, projection: 'fuse' });
    const wb = await s.client.createWorkspace('main', { at: b, projection: 'fuse' });
    const st = await s.client.daemonStatus();
    assert.ok(st);
    assert.deepEqual(st.mounts.map((m) => m.workspaceId).sort(), [wa.id, wb.id].sort());

    await sh(b, 'echo lost > lost.txt');
    assert.equal((await s.client.stopDaemon()).outcome, 'Dirty');
    // Ending one of two keeps the daemon.
    assert.equal((await s.client.endWorkspace(wa.id)).outcome, 'Ended');
    const st2 = await s.client.daemonStatus();
    assert.equal(st2?.pid, st.pid);

    process.kill(st.pid, 'SIGKILL');
    while (alive(st.pid)) await sleep(20);
    assert.equal(s.client.workspace(wb.id).state, 'lost');
    await assert.rejects(s.client.workspaceStatus(wb.id), { code: 'ERR_NOT_FOUND' });
    await assert.rejects(s.client.commitWorkspace(wb.id), { code: 'ERR_NOT_FOUND' });
    assert.equal((await s.client.endWorkspace(wb.id)).outcome, 'Dirty');
    assert.equal(await mounted(b), true, 'the stale mount is still attached');
    assert.equal((await s.client.endWorkspace(wb.id, { discard: true })).outcome, 'Ended');
    assert.equal(await mounted(b), false);
    assert.deepEqual(s.client.workspaces(), []);
    assert.deepEqual(s.client.log('main'), []);
    assert.equal((await s.client.stopDaemon()).outcome, 'NotRunning');
    assertIntact(s.client);
  } finally {
    await finish(s, [a, b]);
    s.client.close();
  }
});
