// FUSE Workspaces from the CLI: create --projection fuse, files written by child processes in
// the mount, status per path, commit while mounted (Created, then UpToDate; the Workspace
// continues from the new Commit), Busy while an execution runs, end refusing uncommitted
// changes, end --discard, daemon status/stop, and a lost Workspace after the daemon is
// SIGKILLed, ended with --discard; a conflict resolved with the version written into the
// mount. This process never touches a mount itself: only the CLI and programs it starts do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { detachStale, fuseAvailable, stopDaemon } from '../../lib/fuse/index.js';
import { cli } from '../helpers/cli.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { alive, mounted } from '../helpers/process-gone.js';

const skip = !fuseAvailable().ok ? `FUSE is not usable here: ${fuseAvailable().reason}` : process.getuid?.() !== 0 ? 'needs root (kernel backend)' : false;

function setup() {
  const dir = tempDir('layerfs-fuse-cli-');
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json') };
  const store = join(dir, 'store.sqlite');
  const src = join(dir, 'proj');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'one\n');
  writeFileSync(join(src, 'gone.txt'), 'bye\n');
  const run = (args: string[]) => cli(['--json', ...args], env);
  const ok = (args: string[]) => {
    const r = run(args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.json;
  };
  ok(['db', 'create', store]);
  ok(['context', 'use', '--store', store]);
  const layer = ok(['layerstack', 'init', '--name', 'proj', src]).layer.id;
  ok(['branch', 'fork', '--name', 'try', '--layer', layer]);
  return { dir, env, store, run, ok };
}

async function cleanup(store: string, paths: string[]): Promise<void> {
  await stopDaemon(store, { discard: true }).catch(() => {});
  for (const p of paths) await detachStale(p).catch(() => false);
}

test('CLI: a FUSE Workspace from create to end, with status, commit, Busy and end refusing changes', { skip }, async () => {
  const { dir, store, run, ok } = setup();
  const at = join(dir, 'ws');
  try {
    const ws = ok(['workspace', 'create', 'try', '--at', at, '--projection', 'fuse']).workspace;
    assert.equal(ws.projection, 'fuse');
    assert.equal(ws.state, 'mounted');
    assert.equal(ok(['query', 'workspaces']).workspaces[0].state, 'mounted');

    // Programs run in the mount (cwd in it) through workspace exec.
    const ex = run(['workspace', 'exec', ws.id, '--', 'sh', '-c', 'echo two >> a.txt && mkdir d && echo x > d/b.txt && rm gone.txt && pwd']);
    assert.equal(ex.code, 0, ex.stderr);
    const status = ok(['workspace', 'status', ws.id]);
    assert.equal(status.clean, false);
    assert.deepEqual(status.changes.map((c: { change: string; path: string }) => `${c.change} ${c.path}`), ['modified a.txt', 'added d', 'added d/b.txt', 'deleted gone.txt']);

    const c1 = ok(['workspace', 'commit', ws.id]);
    assert.equal(c1.outcome, 'Created');
    assert.equal(c1.commit.parentCommitId, null);
    assert.equal(ok(['workspace', 'commit', ws.id]).outcome, 'UpToDate');
    assert.equal(ok(['workspace', 'status', ws.id]).clean, true);
    assert.deepEqual(ok(['log', 'try']).commits.map((c: { id: string }) => c.id), [c1.commit.id]);
    assert.equal(run(['cat', 'try', 'a.txt']).stdout, 'one\ntwo\n');

    // The mount continues from the new Commit: the next commit has it as parent.
    assert.equal(run(['workspace', 'exec', ws.id, '--', 'sh', '-c', 'echo three >> a.txt']).code, 0);
    const c2 = ok(['workspace', 'commit', ws.id]);
    assert.equal(c2.outcome, 'Created');
    assert.equal(c2.commit.parentCommitId, c1.commit.id);
    assert.equal(run(['cat', 'try', 'a.txt']).stdout, 'one\ntwo\nthree\n');

    // Busy while an execution runs in the Workspace.
    const started = ok(['workspace', 'exec', '--detach', ws.id, '--', 'sh', '-c', 'echo started > started.txt; sleep 60']);
    const busy = run(['workspace', 'commit', ws.id]);
    assert.equal(busy.json.outcome, 'Busy');
    assert.equal(busy.code, 3);
    assert.equal(ok(['workspace', 'stop', started.execution.id]).outcome, 'Stopped');

    // end refuses uncommitted changes (started.txt), end --discard drops them and unmounts.
    const dirty = run(['workspace', 'end', ws.id]);
    assert.equal(dirty.json.outcome, 'Dirty', dirty.stderr);
    assert.equal(dirty.code, 3);
    // One new file is one change, as `workspace status` lists it (not its record plus its directory's).
    assert.equal(dirty.json.changes, ok(['workspace', 'status', ws.id]).changes.length);
    assert.equal(ok(['workspace', 'end', ws.id, '--discard']).outcome, 'Ended');
    assert.equal(await mounted(at), false);
    assert.deepEqual(ok(['query', 'workspaces']).workspaces, []);
    // The daemon exits when its last Workspace ends.
    const deadline = Date.now() + 20_000;
    while (ok(['daemon', 'status']).running && Date.now() < deadline) await sleep(200);
    assert.equal(ok(['daemon', 'status']).running, false);
  } finally {
    await cleanup(store, [at]);
  }
  assertStoreIntact(store);
});

test('CLI: daemon status/stop; Workspaces of a stopped or SIGKILLed daemon are lost and end with --discard', { skip }, async () => {
  const { dir, env, store, run, ok } = setup();
  const a = join(dir, 'ws-a');
  const b = join(dir, 'ws-b');
  try {
    const wa = ok(['workspace', 'create', 'try', '--at', a, '--projection', 'fuse']).workspace;
    const st = ok(['daemon', 'status']);
    assert.equal(st.running, true);
    assert.deepEqual(st.mounts.map((m: { workspaceId: string }) => m.workspaceId), [wa.id]);

    // A clean stop unmounts; the Workspace is lost (not mounted) and ends only with --discard.
    assert.equal(ok(['daemon', 'stop']).outcome, 'Stopped');
    assert.equal(ok(['daemon', 'status']).running, false);
    assert.equal(ok(['query', 'workspaces']).workspaces[0].state, 'lost');
    const refused = run(['workspace', 'end', wa.id]);
    assert.equal(refused.json.outcome, 'Dirty');
    assert.equal(ok(['workspace', 'end', wa.id, '--discard']).outcome, 'Ended');
    assert.equal(ok(['daemon', 'stop']).outcome, 'NotRunning');

    // SIGKILL: the mount goes stale; status names the loss, end --discard detaches it.
    const wb = ok(['workspace', 'create', 'try', '--at', b, '--projection', 'fuse']).workspace;
    assert.equal(run(['workspace', 'exec', wb.id, '--', 'sh', '-c', 'echo lost > lost.txt']).code, 0);
    const dirtyStop = run(['daemon', 'stop']);
    assert.equal(dirtyStop.json.outcome, 'Dirty');
    const pid = ok(['daemon', 'status']).pid as number;
    process.kill(pid, 'SIGKILL');
    while (alive(pid)) await sleep(20);
    assert.equal(ok(['query', 'workspaces']).workspaces[0].state, 'lost');
    const st2 = run(['workspace', 'status', wb.id]);
    assert.notEqual(st2.code, 0);
    assert.match(st2.stderr + st2.stdout, /ERR_NOT_FOUND|gone/);
    assert.equal(await mounted(b), true, 'the stale mount is still attached');
    assert.equal(run(['workspace', 'end', wb.id]).json.outcome, 'Dirty');
    // In text mode, a lost Workspace says what to do next.
    assert.match(cli(['workspace', 'end', wb.id], env).stdout, /next: layerfs workspace end \S+ --discard/);
    assert.equal(ok(['workspace', 'end', wb.id, '--discard']).outcome, 'Ended');
    assert.equal(await mounted(b), false);
    assert.deepEqual(ok(['query', 'workspaces']).workspaces, []);
  } finally {
    await cleanup(store, [a, b]);
  }
  assertStoreIntact(store);
});

test('CLI: a FUSE Workspace resolves a conflict with the version written into the mount', { skip }, async () => {
  const { dir, store, env, run, ok } = setup();
  const a = join(dir, 'wa');
  const b = join(dir, 'wb');
  try {
    const wa = ok(['workspace', 'create', 'try', '--at', a, '--projection', 'fuse']).workspace;
    const wb = ok(['workspace', 'create', 'try', '--at', b, '--projection', 'fuse']).workspace;
    assert.equal(run(['workspace', 'exec', wa.id, '--', 'sh', '-c', 'echo ONE > a.txt']).code, 0);
    assert.equal(run(['workspace', 'exec', wb.id, '--', 'sh', '-c', 'echo uno > a.txt && rm gone.txt']).code, 0);
    assert.equal(ok(['workspace', 'commit', wa.id]).outcome, 'Created');
    const c = run(['workspace', 'commit', wb.id]);
    assert.equal(c.json.outcome, 'Conflicted', c.stdout);
    assert.deepEqual(ok(['workspace', 'conflicts', wb.id]).conflicts.map((x: { id: number; path: string }) => [x.id, x.path]), [[1, 'a.txt']]);
    // --branch needs a materialized Workspace: the version goes into the mount, then --working-tree.
    assert.equal(run(['workspace', 'resolve', wb.id, '1', '--branch']).code, 1);
    assert.equal(run(['workspace', 'exec', wb.id, '--', 'sh', '-c', 'echo both > a.txt']).code, 0);
    assert.equal(ok(['workspace', 'resolve', wb.id, '1', '--working-tree']).outcome, 'Resolved');
    assert.equal(ok(['workspace', 'commit', wb.id]).outcome, 'Created');
    assert.equal(cli(['cat', 'try', 'a.txt'], env).stdout, 'both\n');
    assert.equal(cli(['cat', 'try', 'gone.txt'], env).code, 1);
    assert.deepEqual(ok(['workspace', 'conflicts', wb.id]).conflicts, []);
  } finally {
    await cleanup(store, [a, b]);
  }
  assertStoreIntact(store);
});
