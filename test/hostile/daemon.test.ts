// Hostile input against the mount daemon and FUSE Workspaces (issue: hostile input and shared
// machines, items 1, 2, 4, 6, 12): one Store reached through two spellings, another local user
// (uid 65534 through setpriv: nothing on the machine is changed), a client that never reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '../../lib/sdk/index.js';
import { daemonPaths, daemonStatus, detachStale, fuseAvailable } from '../../lib/fuse/index.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { ok, run, setupStore, type StoreSetup } from '../fuse/helpers.js';

const skip = !fuseAvailable().ok ? `FUSE is not usable here: ${fuseAvailable().reason}` : process.getuid?.() !== 0 ? 'needs root (kernel backend, setpriv)' : false;

/** Runs argv as uid/gid 65534 with no supplementary groups. */
function asNobody(argv: string[], opts: { cwd?: string } = {}) {
  return run('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', ...argv], opts);
}

function fill(src: string): void {
  writeFileSync(join(src, 'a.txt'), 'a\n');
  // A setuid-root copy of id(1) and a file only root may read.
  copyFileSync('/usr/bin/id', join(src, 'suid-id'));
  chmodSync(join(src, 'suid-id'), 0o4755);
  writeFileSync(join(src, 'secret'), 'root only\n');
  chmodSync(join(src, 'secret'), 0o600);
}

async function finish(s: StoreSetup, paths: string[]): Promise<void> {
  await s.client.stopDaemon({ discard: true }).catch(() => {});
  for (const p of paths) await detachStale(p).catch(() => false);
  s.client.close();
}

function mountOptions(path: string): string[] {
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const f = line.split(' ');
    if (f[4] === path) return f[5]!.split(',');
  }
  return [];
}

test('one Store through a symlink and its real path: one daemon, the Workspace is mounted (not lost) either way, commit keeps the file', { skip, timeout: 120_000 }, async () => {
  const s = await setupStore(fill, 'layerfs-hostile-');
  const alias = join(s.dir, 'alias.sqlite');
  symlinkSync(s.storePath, alias);
  const at = join(s.dir, 'ws');
  const viaAlias = Client.connect(alias);
  try {
    assert.equal(daemonPaths(alias).dir, daemonPaths(s.storePath).dir);
    const ws = await viaAlias.createWorkspace('main', { at, projection: 'fuse' });
    await ok('sh', ['-c', 'echo live > new.txt'], { cwd: at });
    const viaReal = s.client.workspaces().find((w) => w.id === ws.id)!;
    assert.equal(viaReal.state, 'mounted', 'through the real path the live Workspace looked lost');
    const c = await s.client.commitWorkspace(ws.id);
    assert.equal(c.outcome, 'Created');
    assert.equal(s.client.cat('main', 'new.txt').toString(), 'live\n');
    assert.equal((await s.client.endWorkspace(ws.id)).outcome, 'Ended');
  } finally {
    viaAlias.close();
    await finish(s, [at]);
  }
  assertStoreIntact(s.storePath);
});

test('mounts are nosuid,nodev; a root mount lets another user in with exactly what the modes grant', { skip, timeout: 120_000 }, async () => {
  const s = await setupStore(fill, 'layerfs-hostile-');
  chmodSync(s.dir, 0o755);
  const at = join(s.dir, 'ws');
  try {
    await s.client.createWorkspace('main', { at, projection: 'fuse' });
    const opts = mountOptions(at);
    assert.ok(opts.includes('nosuid') && opts.includes('nodev'), `mount options: ${opts.join(',')}`);
    const idr = await asNobody([join(at, 'suid-id'), '-u']);
    assert.equal(idr.code, 0, idr.stderr);
    assert.equal(idr.stdout.trim(), '65534', 'the setuid bit granted root');
    assert.equal((await asNobody(['cat', join(at, 'a.txt')])).stdout, 'a\n');
    const secret = await asNobody(['cat', join(at, 'secret')]);
    assert.notEqual(secret.code, 0, 'a 0600 root file was readable by another user');
    const write = await asNobody(['sh', '-c', `echo x > ${join(at, 'a.txt')}`]);
    assert.notEqual(write.code, 0, 'another user wrote into a 0644 root file');
  } finally {
    await finish(s, [at]);
  }
});

test("another user cannot keep the daemon from starting (the old abstract lock name is squatted; the new lock is in the 0700 <store>.d)", { skip, timeout: 120_000 }, async () => {
  const s = await setupStore(fill, 'layerfs-hostile-');
  const real = daemonPaths(s.storePath).store;
  const oldName = `\0layerfs-daemon-${createHash('sha256').update(real).digest('hex').slice(0, 32)}`;
  const squatter = spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', process.execPath, '-e', `require('net').createServer().listen(${JSON.stringify(oldName)}, () => console.log('bound'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const at = join(s.dir, 'ws');
  try {
    await new Promise<void>((resolve) => squatter.stdout!.once('data', () => resolve()));
    const lock = await asNobody(['sh', '-c', `: >> ${daemonPaths(s.storePath).lock}`]);
    assert.notEqual(lock.code, 0, 'another user could create the lock file');
    const t0 = Date.now();
    const ws = await s.client.createWorkspace('main', { at, projection: 'fuse' });
    assert.equal(ws.state, 'mounted');
    assert.ok(Date.now() - t0 < 15_000);
  } finally {
    squatter.kill('SIGKILL');
    await finish(s, [at]);
  }
});

test('a client that pipelines requests and never reads the answers holds a bounded amount of daemon memory', { skip, timeout: 180_000 }, async () => {
  const s = await setupStore(fill, 'layerfs-hostile-');
  const at = join(s.dir, 'ws');
  try {
    await s.client.createWorkspace('main', { at, projection: 'fuse' });
    const st = (await daemonStatus(s.storePath))!;
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${st.pid}/status`, 'utf8'))![1]) * 1024;
    const before = rss();
    const token = (await readFile(daemonPaths(s.storePath).token, 'utf8')).trim();
    const sock = connect(daemonPaths(s.storePath).socket);
    await new Promise<void>((resolve) => sock.once('connect', () => resolve()));
    sock.pause();
    const line = JSON.stringify({ op: 'status', token }) + '\n';
    const batch = line.repeat(Math.ceil((64 * 1024) / line.length));
    let sent = 0;
    while (sent < 8 * 1024 * 1024) {
      sock.write(batch);
      sent += batch.length;
    }
    await sleep(8000);
    const grown = rss() - before;
    console.log(`daemon RSS: ${(before / 1048576).toFixed(0)} MiB before, grew ${(grown / 1048576).toFixed(1)} MiB for 8 MiB of unread requests`);
    sock.destroy();
    assert.ok(grown < 200 * 1024 * 1024, `the daemon grew by ${(grown / 1048576).toFixed(0)} MiB for 8 MiB of unread requests`);
    // It still serves others.
    assert.equal((await daemonStatus(s.storePath))?.pid, st.pid);
  } finally {
    await finish(s, [at]);
  }
});

test('a failed FUSE create leaves a directory the user had made', { skip, timeout: 120_000 }, async () => {
  const s = await setupStore(fill, 'layerfs-hostile-');
  const at = join(s.dir, 'mine');
  mkdirSync(at);
  try {
    await assert.rejects(s.client.createWorkspace('main', { at, projection: 'fuse', backend: 'bogus' as 'kernel' }));
    assert.ok(existsSync(at), 'the user-made directory was removed');
    assert.deepEqual(s.client.workspaces(), []);
  } finally {
    await finish(s, [at]);
  }
});

test('forged Stores through the daemon: a mount request whose root id is a blob, and a file whose size exceeds its blob, are typed errors', { skip, timeout: 120_000 }, async () => {
  const { forgedStore } = await import('../helpers/forge.js');
  const { mountWorkspace, stopDaemon } = await import('../../lib/fuse/index.js');
  const { idOf, ObjectKind } = await import('../../lib/store/index.js');
  const s = await forgedStore((f) => new Map([[1, f.directory([['f', 2]])], [2, f.file(Buffer.from('12345'), [1], 4096)]]));
  const c = Client.connect(s.storePath);
  const at = join(s.dir, 'ws');
  const at2 = join(s.dir, 'ws2');
  try {
    const b = c.branch('main');
    mkdirSync(at2);
    const blob = idOf(ObjectKind.Blob, Buffer.from('12345')).toString('hex');
    const req = { workspaceId: 'ab'.repeat(16), branchId: b.id, path: at2, expectedHead: null, expectedBase: b.baseLayerId, rootId: blob };
    await assert.rejects(mountWorkspace(s.storePath, req), (e: unknown) => e instanceof Error && (e as { code?: string }).code === 'ERR_INVALID_ARGUMENT' && !/\n\s+at /.test(e.message));

    await c.createWorkspace('main', { at, projection: 'fuse' });
    const append = await run('sh', ['-c', `echo more >> ${join(at, 'f')}`]);
    const r = await c.commitWorkspace((c.workspaces()[0]!).id).then((x) => ({ ok: x.outcome }), (e: unknown) => ({ err: (e as { code?: string }).code }));
    assert.notDeepEqual(r, { err: 'ERR_NATIVE' }, `append: ${append.code} ${append.stderr}`);
    if ('err' in r) assert.equal(r.err, 'ERR_CORRUPT');
    await stopDaemon(s.storePath, { discard: true });
  } finally {
    c.close();
    for (const p of [at, at2]) await detachStale(p).catch(() => false);
  }
});

test('a forged state served by FUSE: a directory cycle, 8-way fan-out and an extent bomb neither wedge nor crash the daemon', { skip, timeout: 180_000 }, async () => {
  const { forgedStore, ContentForm, InodeKind, ObjectKind } = await import('../helpers/forge.js');
  const s = await forgedStore((f) => {
    const chunk = f.put(ObjectKind.Chunk, Buffer.from('0123456789'));
    let node = f.extentNode(0, Array(8).fill(chunk), Array(8).fill(10));
    for (let level = 1, len = 80; level <= 8; level++, len *= 8) node = f.extentNode(level, Array(8).fill(node), Array(8).fill(len));
    const m = new Map([
      [1, f.directory([['bomb', 2], ['loop', 3], ['fan', 4]])],
      [2, f.inode({ kind: InodeKind.File, parents: [1], size: 10, form: ContentForm.Extents, content: node })],
      [3, f.directory([['again', 3]], [1])],
    ]);
    for (let d = 4; d <= 7; d++) m.set(d, f.directory(d === 7 ? [] : Array.from({ length: 8 }, (_, i) => [`n${i}`, d + 1] as [string, number]), [d - 1]));
    return m;
  });
  const c = Client.connect(s.storePath);
  const at = join(s.dir, 'ws');
  try {
    const ws = await c.createWorkspace('main', { at, projection: 'fuse' });
    const find = await run('timeout', ['60', 'find', at]);
    assert.notEqual(find.code, 124, 'find did not finish in 60 s');
    assert.ok(find.stdout.split('\n').length < 5000, `find listed ${find.stdout.split('\n').length} paths`);
    const cat = await run('timeout', ['60', 'cat', join(at, 'bomb')]);
    assert.notEqual(cat.code, 124);
    assert.ok(cat.stdout.length <= 10, `cat read ${cat.stdout.length} bytes of a 10-byte file`);
    const st = await daemonStatus(s.storePath);
    assert.equal(st?.mounts.length, 1, 'the daemon no longer serves the mount');
    assert.equal((await c.endWorkspace(ws.id, { discard: true })).outcome, 'Ended');
  } finally {
    c.close();
    await detachStale(at).catch(() => false);
  }
});
