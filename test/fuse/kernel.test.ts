// What the kernel backend adds over libfuse 2: RENAME2 flags, nanosecond and single-field time
// changes, callers' credentials, any name bytes, hard links as one inode, fifos, fallocate,
// directories removed under a process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdir, readdir, stat, writeFile, link, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { commitFuse, stopDaemon, unmountWorkspace } from '../../lib/fuse/index.js';
import { mountBranch, ok, run, setupStore, withMount } from './helpers.js';
import { fillBasic } from './scenarios.js';

const py = (code: string) => run('python3', ['-c', code]);

test('kernel backend: RENAME_NOREPLACE and RENAME_EXCHANGE', async () => {
  const s = await setupStore(fillBasic, 'layerfs-k-rename-');
  await withMount(s, async (m) => {
    assert.equal(m.backend, 'kernel');
    const a = join(m.path, 'README');
    const b = join(m.path, 'lib/a.txt');
    const renameat2 = (x: string, y: string, flags: number) =>
      py(`import ctypes,sys\nlibc=ctypes.CDLL(None,use_errno=True)\nr=libc.renameat2(-100,b"${x}",-100,b"${y}",${flags})\nsys.exit(ctypes.get_errno() if r else 0)`);
    assert.equal((await renameat2(a, b, 1)).code, 17, 'NOREPLACE over an existing name: EEXIST');
    assert.equal((await renameat2(a, join(m.path, 'fresh'), 1)).code, 0);
    assert.equal((await renameat2(join(m.path, 'fresh'), b, 2)).code, 0, 'EXCHANGE');
    assert.equal(await readFile(b, 'utf8'), 'readme\n');
    assert.equal(await readFile(join(m.path, 'fresh'), 'utf8'), 'a\n');
    // A directory and a file trade places.
    assert.equal((await renameat2(join(m.path, 'lib/deep'), join(m.path, 'fresh'), 2)).code, 0);
    assert.equal(await readFile(join(m.path, 'fresh/b.txt'), 'utf8'), 'b\n');
    assert.equal(await readFile(join(m.path, 'lib/deep'), 'utf8'), 'a\n');
    const c = await commitFuse(s.storePath, m.workspaceId);
    assert.equal(c.outcome, 'Created');
    assert.deepEqual(s.client.ls(s.client.branch('main').headCommitId!, 'fresh').map((e) => e.name), ['b.txt']);
  });
});

test('kernel backend: times to the nanosecond, mtime or atime alone; tar keeps mtimes', async () => {
  const s = await setupStore(fillBasic, 'layerfs-k-times-');
  await withMount(s, async (m) => {
    const f = join(m.path, 'README');
    await ok('touch', ['-m', '-d', '@1000000000.123456789', f]);
    let st = await stat(f, { bigint: true });
    assert.equal(st.mtimeNs, 1_000_000_000_123_456_789n);
    await ok('touch', ['-a', '-d', '@1200000000', f]);
    st = await stat(f, { bigint: true });
    assert.equal(st.mtimeNs, 1_000_000_000_123_456_789n, 'atime alone leaves the mtime');
    assert.equal(st.atimeNs, 1_200_000_000_000_000_000n);
    assert.equal((await py(`import os\nos.utime("${f}", ns=(5, 1700000000987654321))`)).code, 0);
    assert.equal((await stat(f, { bigint: true })).mtimeNs, 1_700_000_000_987_654_321n);
    const c = await commitFuse(s.storePath, m.workspaceId);
    assert.equal(c.outcome, 'Created');
    const info = s.client.stat(s.client.branch('main').headCommitId!, 'README');
    assert.equal(info.mtimeNs, 1_700_000_000_987_654_321n, 'the Commit keeps nanoseconds');
  });
});

test('kernel backend: new inodes belong to the caller; permissions are enforced', async () => {
  const s = await setupStore(fillBasic, 'layerfs-k-creds-');
  await chmod(s.dir, 0o755); // mkdtemp makes it 0700; others must reach the mount point
  // Only the mounting user may enter a mount that does not allow others (root's allow them by default).
  await withMount(
    s,
    async (m) => {
      assert.notEqual((await run('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'ls', m.path])).code, 0);
    },
    { allowOther: false },
  );
  await withMount(s, async (m) => {
    const shared = join(m.path, 'shared');
    await mkdir(shared);
    await chmod(shared, 0o777);
    const asNobody = (...cmd: string[]) => run('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...cmd]);
    const touched = await asNobody('touch', join(shared, 'mine'));
    assert.equal(touched.code, 0, touched.stderr);
    assert.equal((await asNobody('mkdir', join(shared, 'mydir'))).code, 0);
    const st = await stat(join(shared, 'mine'));
    assert.equal(st.uid, 65534);
    assert.equal(st.gid, 65534);
    assert.equal((await stat(join(shared, 'mydir'))).uid, 65534);
    assert.notEqual((await asNobody('sh', '-c', `echo x > ${join(m.path, 'README')}`)).code, 0, 'a 0644 file of root is not writable by nobody');
  }, { allowOther: true });
});

test('kernel backend: any name bytes, fifos, fallocate, hard links as one inode, a removed working directory', async () => {
  const s = await setupStore(fillBasic, 'layerfs-k-misc-');
  const m = await mountBranch(s);
  try {
    assert.equal((await py(`import os\nopen(os.path.join(b"${m.path}", b"caf\\xe9-\\xff"), "wb").write(b"latin1")`)).code, 0);
    const names = await readdir(m.path, { encoding: 'buffer' });
    assert.ok(names.some((n) => n.equals(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2d, 0xff]))));
    await ok('mkfifo', [join(m.path, 'pipe')]);
    assert.ok((await stat(join(m.path, 'pipe'))).isFIFO());
    await ok('fallocate', ['-l', '1000000', join(m.path, 'alloc')]);
    assert.equal((await stat(join(m.path, 'alloc'))).size, 1_000_000);
    // One kernel inode per hard-linked file: a write through one name is seen through the other.
    await writeFile(join(m.path, 'h1'), 'one');
    await link(join(m.path, 'h1'), join(m.path, 'h2'));
    await stat(join(m.path, 'h2'));
    await writeFile(join(m.path, 'h1'), 'changed content');
    assert.equal((await stat(join(m.path, 'h2'))).size, 15);
    assert.equal(await readFile(join(m.path, 'h2'), 'utf8'), 'changed content');
    // A process inside a directory that another removes.
    const r = await run('sh', ['-c', `mkdir d && cd d && rmdir ../d && (touch x; echo $?) && ls -a`], { cwd: m.path });
    assert.match(r.stdout, /^1\n/);
    const c = await commitFuse(s.storePath, m.workspaceId);
    assert.equal(c.outcome, 'Created');
    await unmountWorkspace(s.storePath, m.workspaceId);
    const again = await mountBranch(s);
    const names2 = await readdir(again.path, { encoding: 'buffer' });
    assert.ok(names2.some((n) => n.equals(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2d, 0xff]))));
    assert.ok((await stat(join(again.path, 'pipe'))).isFIFO());
    assert.equal((await stat(join(again.path, 'h1'))).ino, (await stat(join(again.path, 'h2'))).ino);
    assert.equal((await stat(join(again.path, 'h2'))).nlink, 2);
    await unmountWorkspace(s.storePath, again.workspaceId);
  } finally {
    await unmountWorkspace(s.storePath, m.workspaceId, { discard: true }).catch(() => {});
    await stopDaemon(s.storePath, { discard: true });
  }
  assert.equal(s.client.verify().ok, true);
});

test('kernel backend, root mount without allow_other: root meets the same permission answers as on a plain directory', async () => {
  // Such a mount leaves default_permissions out (docs/FUSE.md): the overlay answers ACCESS and
  // the kernel still checks exec bits, so the outcomes must equal the local disk's.
  const s = await setupStore(fillBasic, 'layerfs-k-rootperm-');
  const script = [
    'printf "#!/bin/sh\\necho ran\\n" > run.sh; chmod 0644 run.sh',
    './run.sh; echo "exec 0644: $?"',
    'test -x run.sh; echo "test -x 0644: $?"',
    'chmod 0744 run.sh; ./run.sh; echo "exec 0744: $?"',
    'echo ro > ro.txt; chmod 0444 ro.txt; echo more >> ro.txt; echo "append 0444: $?"; cat ro.txt',
    'test -w ro.txt; echo "test -w 0444: $?"',
    'chmod 0000 ro.txt; cat ro.txt > /dev/null; echo "read 0000: $?"',
    'mkdir closed; chmod 0000 closed; touch closed/x; echo "create in 0000 dir: $?"; ls closed; test -x closed; echo "test -x 0000 dir: $?"',
    'cd closed && echo "cd 0000 dir: $?"',
  ].join('\n');
  const plain = join(s.dir, 'plain');
  await mkdir(plain);
  const want = await run('sh', ['-c', script], { cwd: plain });
  await withMount(s, async (m) => {
    const dir = join(m.path, 'perm');
    await mkdir(dir);
    const got = await run('sh', ['-c', script], { cwd: dir });
    assert.equal(got.stdout, want.stdout);
    assert.match(got.stdout, /exec 0644: 126/);
    assert.match(got.stdout, /append 0444: 0/);
  }, { allowOther: false });
});
