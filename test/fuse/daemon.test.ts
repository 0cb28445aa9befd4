// The daemon: SIGKILL leaves the Store intact and the next start cleans the stale mount and
// reports lost work; bad requests get errors and never stop it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '../../lib/sdk/index.js';
import { commitFuse, daemonPaths, daemonStatus, ensureDaemon, mountWorkspace, stopDaemon, unmountWorkspace } from '../../lib/fuse/index.js';
import { changedMarker } from '../../lib/fuse/protocol.js';
import { mountBranch, setupStore } from './helpers.js';
import { processAlive } from '../helpers/process-gone.js';

function fill(src: string): void {
  mkdirSync(join(src, 'lib'));
  writeFileSync(join(src, 'README'), 'readme\n');
  writeFileSync(join(src, 'lib/a.txt'), 'a\n');
}

/**
 * Whether any thread of the daemon is left. A zombie thread-group leader is not enough: its other
 * threads may still be exiting with /dev/fuse open, and a stat queued meanwhile fails with
 * ECONNABORTED when the connection is aborted, not ENOTCONN (the earlier flake of this test).
 */
function alive(pid: number): boolean {
  return processAlive(pid).alive;
}

test('SIGKILL of the daemon: the Store stays intact, the next start cleans the stale mount and names lost work', { timeout: 120_000 }, async () => {
  const s = await setupStore(fill, 'layerfs-crash-');
  const m = await mountBranch(s);
  try {
    // The mark of uncommitted work is on disk before the change is answered, and gone after the
    // Commit: a kill right after a write is still reported, a kill after a Commit is not.
    const marker = changedMarker(join(daemonPaths(s.storePath).spool, m.workspaceId));
    await writeFile(join(m.path, 'committed.txt'), 'kept\n');
    assert.equal(existsSync(marker), true);
    const c = await commitFuse(s.storePath, m.workspaceId);
    assert.equal(c.outcome, 'Created');
    assert.equal(existsSync(marker), false);
    await writeFile(join(m.path, 'uncommitted.txt'), 'lost\n');
    assert.equal(existsSync(marker), true);
    const st = await daemonStatus(s.storePath);
    assert.equal(st?.mounts[0]?.dirty, true);
    process.kill(m.daemonPid, 'SIGKILL');
    while (alive(m.daemonPid)) await sleep(20);
    // The mount is stale now: ENOTCONN, or ECONNABORTED when something aborted the dead
    // connection through fusectl meanwhile (another daemon's unmount of a lingering connection).
    await assert.rejects(stat(join(m.path, 'README')), (e: NodeJS.ErrnoException) => e.code === 'ENOTCONN' || e.code === 'ECONNABORTED');
    assert.equal(await daemonStatus(s.storePath), null);

    // The next start (on demand) detaches it and reports the Workspace's lost changes.
    const restarted = await ensureDaemon(s.storePath);
    assert.notEqual(restarted.pid, m.daemonPid);
    assert.deepEqual(restarted.recovered?.cleaned, [m.path]);
    assert.deepEqual(restarted.recovered?.lostUncommitted.map((w) => w.workspaceId), [m.workspaceId]);
    assert.deepEqual(await readdir(m.path), []);
    const report = JSON.parse(await readFile(daemonPaths(s.storePath).recovery, 'utf8'));
    assert.equal(report.lostUncommitted[0].workspaceId, m.workspaceId);

    // The Store is intact: verify passes, the Commit made before the crash is the head.
    const client = Client.connect(s.storePath);
    try {
      assert.equal(client.verify().ok, true);
      const b = client.branch('main');
      assert.equal(b.headCommitId, c.outcome === 'Created' ? c.commitId : null);
      assert.deepEqual(client.ls(b.headCommitId!).map((e) => e.name).sort(), ['README', 'committed.txt', 'lib']);
    } finally {
      client.close();
    }
    // The same directory mounts again, from the Commit.
    const b = s.client.branch('main');
    const ws = randomBytes(16).toString('hex');
    await mountWorkspace(s.storePath, { workspaceId: ws, branchId: b.id, path: m.path, expectedHead: b.headCommitId, expectedBase: b.baseLayerId, rootId: b.rootId });
    assert.deepEqual((await readdir(m.path)).sort(), ['README', 'committed.txt', 'lib']);
    assert.equal((await unmountWorkspace(s.storePath, ws)).outcome, 'Unmounted');
  } finally {
    await stopDaemon(s.storePath, { discard: true }).catch(() => {});
  }
});

async function raw(path: string, payload: string): Promise<any[]> {
  return new Promise((resolve, reject) => {
    const sock = connect(path);
    let buf = '';
    sock.setEncoding('utf8');
    sock.on('connect', () => sock.end(payload));
    sock.on('data', (d: string) => (buf += d));
    // The daemon may cut a client off mid-write (an oversized request): keep what it answered.
    sock.on('error', (e: NodeJS.ErrnoException) => (e.code === 'EPIPE' || e.code === 'ECONNRESET' ? undefined : reject(e)));
    sock.on('close', () => resolve(buf.split('\n').filter(Boolean).map((l) => JSON.parse(l))));
  });
}

test('bad requests get errors and never stop the daemon; socket and token are private', { timeout: 120_000 }, async () => {
  const s = await setupStore(fill, 'layerfs-badreq-');
  const m = await mountBranch(s);
  try {
    const p = daemonPaths(s.storePath);
    assert.equal((await lstat(p.socket)).mode & 0o777, 0o600);
    assert.equal((await lstat(p.token)).mode & 0o777, 0o600);
    assert.equal((await lstat(p.dir)).mode & 0o077, 0);
    const token = (await readFile(p.token, 'utf8')).trim();
    const b = s.client.branch('main');
    const goodMount = { op: 'mount', workspaceId: randomBytes(16).toString('hex'), branchId: b.id, expectedHead: null, expectedBase: b.baseLayerId, rootId: b.rootId };
    const notEmpty = join(s.dir, 'src');
    const cases: [string, string][] = [
      ['garbage\n', 'ERR_INVALID_ARGUMENT'],
      ['{"op":"status"}\n', 'ERR_INVALID_ARGUMENT'],
      [JSON.stringify({ op: 'status', token: 'ab'.repeat(32) }) + '\n', 'ERR_INVALID_ARGUMENT'],
      [JSON.stringify({ op: 'status', token: 42 }) + '\n', 'ERR_INVALID_ARGUMENT'],
      ['[1,2]\n', 'ERR_INVALID_ARGUMENT'],
      [JSON.stringify({ op: 'explode', token }) + '\n', 'ERR_INVALID_ARGUMENT'],
      [JSON.stringify({ op: 'commit', token, workspaceId: 'zz' }) + '\n', 'ERR_INVALID_ARGUMENT'],
      [JSON.stringify({ op: 'commit', token, workspaceId: randomBytes(16).toString('hex') }) + '\n', 'ERR_NOT_FOUND'],
      [JSON.stringify({ op: 'unmount', token, workspaceId: null }) + '\n', 'ERR_INVALID_ARGUMENT'],
      [JSON.stringify({ ...goodMount, token, path: 'relative/dir' }) + '\n', 'ERR_INVALID_ARGUMENT'],
      [JSON.stringify({ ...goodMount, token, path: notEmpty }) + '\n', 'ERR_NOT_EMPTY'],
      [JSON.stringify({ ...goodMount, token, path: join(s.dir, 'missing') }) + '\n', 'ERR_NOT_FOUND'],
      [JSON.stringify({ ...goodMount, token, path: join(m.path, 'lib') }) + '\n', 'ERR_NOT_EMPTY'],
      [JSON.stringify({ ...goodMount, token, path: s.dir }) + '\n', 'ERR_NOT_EMPTY'],
      [JSON.stringify({ ...goodMount, token, workspaceId: m.workspaceId, path: join(s.dir, 'x') }) + '\n', 'ERR_EXISTS'],
      [JSON.stringify({ ...goodMount, token, branchId: randomBytes(16).toString('hex'), path: (mkdirSync(join(s.dir, 'e1')), join(s.dir, 'e1')) }) + '\n', 'ERR_NOT_FOUND'],
      [JSON.stringify({ ...goodMount, token, rootId: randomBytes(32).toString('hex'), path: (mkdirSync(join(s.dir, 'e2')), join(s.dir, 'e2')) }) + '\n', 'ERR_NOT_FOUND'],
      ['{"op":"status","token":"' + token + '","pad":"' + 'x'.repeat(2 << 20) + '"}\n', 'ERR_INVALID_ARGUMENT'],
    ];
    for (const [payload, code] of cases) {
      const answers = await raw(p.socket, payload);
      assert.equal(answers[0]?.ok, false, `refused: ${payload.slice(0, 80)}`);
      assert.equal(answers[0]?.error?.code, code, `${payload.slice(0, 80)} → ${JSON.stringify(answers[0]?.error)}`);
    }
    // A mount inside a mount of this daemon is refused (mounting would deadlock it).
    await mkdir(join(m.path, 'empty'));
    const nested = await raw(p.socket, JSON.stringify({ ...goodMount, token, path: join(m.path, 'empty') }) + '\n');
    assert.equal(nested[0].error?.code, 'ERR_UNSAFE_PATH');
    // Several requests on one connection, and the daemon still serves.
    const two = await raw(p.socket, JSON.stringify({ op: 'status', token }) + '\n' + JSON.stringify({ op: 'status', token }) + '\n');
    assert.equal(two.length, 2);
    assert.ok(two.every((a) => a.ok));
    const st = await daemonStatus(s.storePath);
    assert.equal(st?.pid, m.daemonPid);
    assert.equal(st?.mounts.length, 1);
    assert.equal(await readFile(join(m.path, 'README'), 'utf8'), 'readme\n');
  } finally {
    await unmountWorkspace(s.storePath, m.workspaceId, { discard: true }).catch(() => {});
    await stopDaemon(s.storePath, { discard: true }).catch(() => {});
  }
  // The daemon exits with its last mount.
  for (let i = 0; i < 250 && alive(m.daemonPid); i++) await sleep(20);
  assert.equal(alive(m.daemonPid), false);
});
