// Mounting from the addon: mount(2)/umount2(2) with exactly the options the kernel backend
// uses, typed errors (errno, path, what to do), the SCM_RIGHTS hand-over fusermount speaks, and
// SIGKILL of a daemon (root's, and an ordinary user's mounting through fusermount3): the next
// create detaches the dead mount and mounts again. Mounts made here are never entered by this
// process (only /proc/self/mountinfo is read): nothing serves them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LayerFsError } from '../../lib/errors.js';
import { daemonStatus, unmountWorkspace, stopDaemon } from '../../lib/fuse/index.js';
import { mountTable } from '../../lib/fuse/mounttab.js';
import { fuseMount, receiveFd, socketPair, unmount } from '../../lib/native/index.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { processGone } from '../helpers/process-gone.js';
import { tempDir } from '../helpers/tmp.js';
import { mountBranch, setupStore } from './helpers.js';
import { fillBasic } from './scenarios.js';
import { handToUser, ordinaryUserMachine, ORDINARY } from './user-mount.js';

const asRoot = { skip: process.getuid?.() !== 0 ? 'mount(2) needs root; this machine runs the tests as root' : false };

/** The mountinfo line of `path`: [mount options, file system type, source, super options]. */
async function mountinfo(path: string): Promise<string[] | null> {
  for (const line of (await readFile('/proc/self/mountinfo', 'utf8')).split('\n')) {
    const f = line.split(' ');
    const dash = f.indexOf('-');
    if (f[4] === path) return [f[5]!, f[dash + 1]!, f[dash + 2]!, f[dash + 3]!];
  }
  return null;
}

test('fuseMount mounts /dev/fuse with the kernel backend options; unmount detaches it', asRoot, async () => {
  const path = join(tempDir('layerfs-nmount-'), 'mnt');
  mkdirSync(path);
  const fd = await fuseMount(path, { source: 'layerfs:test', subtype: 'layerfs', options: 'rootmode=40000,user_id=0,group_id=0,default_permissions,allow_other' });
  try {
    assert.ok(fd > 2);
    const [opts, type, source, superOpts] = (await mountinfo(path))!;
    assert.equal(type, 'fuse.layerfs');
    assert.equal(source, 'layerfs:test');
    assert.match(opts!, /(^|,)nosuid(,|$)/);
    assert.match(opts!, /(^|,)nodev(,|$)/);
    assert.equal(superOpts, 'rw,user_id=0,group_id=0,default_permissions,allow_other');
    // The descriptor is /dev/fuse's, close-on-exec (no child inherits a mount's connection).
    assert.equal(fstatSync(fd).rdev, statSync('/dev/fuse').rdev);
    const inherited = spawnSync('/bin/sh', ['-c', `test -e /proc/self/fd/${fd}`]);
    assert.notEqual(inherited.status, 0, 'the /dev/fuse descriptor leaked into a child');
  } finally {
    await unmount(path, true);
    closeSync(fd);
  }
  assert.equal(await mountinfo(path), null);
});

test('fuseMount and unmount fail with typed errors: errno, path and what to do', asRoot, async () => {
  const dir = tempDir('layerfs-nmount-err-');
  const missing = join(dir, 'missing');
  const e1 = await fuseMount(missing, { source: 's', subtype: 'layerfs', options: 'rootmode=40000,user_id=0,group_id=0' }).catch((e: unknown) => e);
  assert.ok(e1 instanceof LayerFsError);
  assert.equal(e1.code, 'ERR_NATIVE_IO');
  assert.equal(e1.details.errno, 'ENOENT');
  assert.equal(e1.details.syscall, 'mount');
  assert.equal(e1.path, missing);
  assert.ok(e1.details.hint);
  // Options the kernel refuses: nothing stays mounted, the descriptor is closed.
  const e2 = await fuseMount(dir, { source: 's', subtype: 'layerfs', options: 'rootmode=40000,user_id=0,group_id=0,no_such_option' }).catch((e: unknown) => e);
  assert.equal((e2 as LayerFsError).details.errno, 'EINVAL');
  assert.equal(await mountinfo(dir), null);
  const e3 = await unmount(dir).catch((e: unknown) => e);
  assert.equal((e3 as LayerFsError).code, 'ERR_NATIVE_IO');
  assert.equal((e3 as LayerFsError).details.errno, 'EINVAL');
  assert.equal((e3 as LayerFsError).path, dir);
  for (const bad of [() => fuseMount('relative', { source: 's', subtype: 'layerfs', options: 'x' }), () => fuseMount(dir, { source: 'a b', subtype: 'layerfs', options: 'x' }), () => fuseMount(dir, { source: 's', subtype: 'layerfs', options: 'fd=3' }), () => unmount('rel')]) {
    const e = await bad().catch((x: unknown) => x);
    assert.equal((e as LayerFsError).code, 'ERR_INVALID_ARGUMENT');
  }
});

test('an ordinary user gets EPERM or EACCES from fuseMount, with a hint (it mounts through fusermount3)', asRoot, () => {
  const dir = tempDir('layerfs-nmount-user-');
  spawnSync('chmod', ['0755', dir]);
  const mod = new URL('../../lib/native/index.ts', import.meta.url).href;
  const code = `const m = await import(${JSON.stringify(mod)}); try { await m.fuseMount(${JSON.stringify(dir)}, { source: 's', subtype: 'layerfs', options: 'rootmode=40000,user_id=4242,group_id=4242' }); console.log('mounted') } catch (e) { console.log(JSON.stringify(e.toJSON())) }`;
  const r = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), '--input-type=module', '-e', code], { encoding: 'utf8', cwd: '/', uid: ORDINARY.uid, gid: ORDINARY.gid, env: { ...process.env, HOME: '/tmp' } });
  assert.equal(r.status, 0, r.stderr);
  const e = JSON.parse(r.stdout) as { code: string; errno: string; path: string; hint: string };
  assert.equal(e.code, 'ERR_NATIVE_IO');
  assert.ok(['EPERM', 'EACCES'].includes(e.errno), e.errno);
  assert.equal(e.path, dir);
  assert.match(e.hint, /fusermount3|permissions/);
});

test('receiveFd takes the descriptor a peer sends as SCM_RIGHTS (what fusermount does), never blocks', async () => {
  const dir = tempDir('layerfs-scm-');
  const file = join(dir, 'sent');
  writeFileSync(file, 'x');
  const [mine, theirs] = socketPair();
  try {
    assert.equal(receiveFd(mine), null, 'nothing sent yet: null at once');
    const py = `import os, socket\ns = socket.socket(fileno=3)\nf = os.open(${JSON.stringify(file)}, os.O_RDONLY)\nsocket.send_fds(s, [b'\\0'], [f])`;
    const child = spawn('/usr/bin/python3', ['-c', py], { stdio: ['ignore', 'inherit', 'inherit', theirs] });
    closeSync(theirs);
    assert.equal(await new Promise((r) => child.on('close', r)), 0);
    const fd = receiveFd(mine);
    assert.ok(fd !== null && fd > 2);
    assert.equal(fstatSync(fd).ino, statSync(file).ino);
    closeSync(fd);
    assert.equal(receiveFd(mine), null, 'the peer has closed: nothing more');
  } finally {
    closeSync(mine);
  }
});

test('SIGKILL of a root daemon: the next create detaches the dead mount (umount2) and mounts again', asRoot, async () => {
  const s = await setupStore(fillBasic, 'layerfs-kill-root-');
  const first = await mountBranch(s);
  let second: Awaited<ReturnType<typeof mountBranch>> | null = null;
  try {
    assert.equal(first.backend, 'kernel');
    await writeFile(join(first.path, 'unsaved'), 'lost');
    process.kill(first.daemonPid, 'SIGKILL');
    await processGone(first.daemonPid);
    second = await mountBranch(s);
    assert.notEqual(second.daemonPid, first.daemonPid);
    assert.equal((await mountTable()).has(first.path), false, 'the dead mount is detached');
    const st = await daemonStatus(s.storePath);
    assert.deepEqual(st?.recovered?.cleaned, [first.path]);
    assert.deepEqual(st?.recovered?.lostUncommitted.map((w) => w.workspaceId), [first.workspaceId]);
    assert.ok((await readdir(second.path)).includes('README'));
    assert.deepEqual(await readdir(first.path), [], 'the old mount point is a plain empty directory again');
  } finally {
    if (second) await unmountWorkspace(s.storePath, second.workspaceId, { discard: true }).catch(() => {});
    await stopDaemon(s.storePath, { discard: true }).catch(() => {});
  }
  assertStoreIntact(s.storePath);
});

test("SIGKILL of an ordinary user's daemon: the next create detaches the dead mount (fusermount3) and mounts again", asRoot, async () => {
  const s = await setupStore(fillBasic, 'layerfs-kill-user-');
  const b = s.client.branch('main');
  const paths = [join(s.dir, 'a'), join(s.dir, 'b')];
  for (const p of paths) mkdirSync(p);
  mkdirSync(join(s.dir, 'ns'));
  await handToUser(s, ORDINARY);
  const machine = await ordinaryUserMachine(join(s.dir, 'ns'), ORDINARY);
  const request = (path: string) => ({ workspaceId: randomBytes(16).toString('hex'), branchId: b.id, path, expectedHead: b.headCommitId, expectedBase: b.baseLayerId, rootId: b.rootId });
  try {
    const a = request(paths[0]!);
    const first = await machine.client<{ backend: string; daemonPid: number }>('mount', s.storePath, a);
    assert.equal(first.backend, 'kernel');
    // The state's root belongs to root: root gives the user a directory of its own there.
    const mine = `${paths[0]}/mine`;
    assert.equal((await machine.run('install', ['-d', '-o', String(ORDINARY.uid), '-g', String(ORDINARY.gid), mine])).code, 0);
    const w = await machine.run('sh', ['-c', `echo lost > ${mine}/unsaved && stat -c %u ${mine}/unsaved`], ORDINARY);
    assert.equal(w.stdout.trim(), String(ORDINARY.uid), `the caller owns what it creates: ${w.stderr}`);
    process.kill(first.daemonPid, 'SIGKILL');
    await processGone(first.daemonPid);
    const second = await machine.client<{ backend: string; daemonPid: number }>('mount', s.storePath, request(paths[1]!));
    assert.notEqual(second.daemonPid, first.daemonPid);
    assert.deepEqual(await machine.fuseMounts(), [paths[1]], 'only the new mount is attached');
    const st = await machine.client<{ recovered: { cleaned: string[]; lostUncommitted: { workspaceId: string }[] } }>('status', s.storePath);
    assert.deepEqual(st.recovered.cleaned, [paths[0]]);
    assert.deepEqual(st.recovered.lostUncommitted.map((x) => x.workspaceId), [a.workspaceId]);
    const ls = await machine.run('ls', [paths[1]!], ORDINARY);
    assert.match(ls.stdout, /README/);
  } finally {
    await machine.client('stop', s.storePath).catch(() => {});
    await machine.close();
  }
  assertStoreIntact(s.storePath);
});

