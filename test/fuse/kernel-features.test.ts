// The kernel features the kernel backend negotiates (lib/fuse/kernel-features.ts), each run on
// and off ($LAYERFS_FUSE_FEATURES, read by the daemon each test starts): the same scenario must
// give the same Commits and status either way, and the daemon's request counts show that the
// feature was (or was not) in use. Off is also what a kernel without the feature gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { commitFuse, daemonStatus, fuseChanges } from '../../lib/fuse/index.js';
import { FEATURES_ENV, kernelFeatures } from '../../lib/fuse/kernel-features.js';
import { isLayerFsError } from '../../lib/errors.js';
import { assertIntact } from '../helpers/integrity.js';
import { ok, run, setupStore, withMount, type StoreSetup } from './helpers.js';
import { big, fillBasic, gitScenario, posixScenario, sqliteScenario, tarScenario } from './scenarios.js';

/** Runs fn with a daemon started under `spec` (each setupStore has its own daemon). */
async function withFeatures<T>(spec: string, fn: (s: StoreSetup) => Promise<T>): Promise<T> {
  const before = process.env[FEATURES_ENV];
  process.env[FEATURES_ENV] = spec;
  try {
    const s = await setupStore(fillBasic, 'layerfs-kfeat-');
    return await fn(s);
  } finally {
    if (before === undefined) delete process.env[FEATURES_ENV];
    else process.env[FEATURES_ENV] = before;
  }
}

async function requests(s: StoreSetup): Promise<Record<string, number>> {
  return (await daemonStatus(s.storePath))?.mounts[0]?.requests ?? {};
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * A writer that keeps its files open across the commit: an overwrite in the middle of a stored
 * file, 3 MiB of a new file in 4 KiB writes, and two O_APPEND handles taking turns. It creates
 * `ready` (outside the mount) once every write(2) has returned and waits for `stop` before closing.
 */
const writer = (dir: string, ready: string, stop: string) => `
import os, sys, time
big = os.open(${JSON.stringify(join(dir, 'big.bin'))}, os.O_WRONLY)
os.pwrite(big, b"X" * 10000, 1234567)
new = os.open(${JSON.stringify(join(dir, 'new.bin'))}, os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(768):
    os.write(new, bytes([i % 251]) * 4096)
a = os.open(${JSON.stringify(join(dir, 'log'))}, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
b = os.open(${JSON.stringify(join(dir, 'log'))}, os.O_WRONLY | os.O_APPEND)
for i in range(200):
    os.write(a if i % 2 == 0 else b, b"line %d\\n" % i)
open(${JSON.stringify(ready)}, "w").close()
while not os.path.exists(${JSON.stringify(stop)}):
    time.sleep(0.02)
for fd in (big, new, a, b):
    os.close(fd)
`;

function expected(): { big: Buffer; newBin: Buffer; log: string } {
  const b = Buffer.from(big);
  b.fill('X', 1234567, 1234567 + 10000);
  const newBin = Buffer.concat(Array.from({ length: 768 }, (_, i) => Buffer.alloc(4096, i % 251)));
  const log = Array.from({ length: 200 }, (_, i) => `line ${i}\n`).join('');
  return { big: b, newBin, log };
}

/** Commits and status while the writer still holds its files open: they hold every returned write. */
async function openWriterScenario(s: StoreSetup): Promise<void> {
  await withMount(s, async (m) => {
    const stop = join(s.dir, 'stop-writer');
    const ready = join(s.dir, 'writer-ready');
    const w = run('python3', ['-c', writer(m.path, ready, stop)]);
    const deadline = Date.now() + 120_000;
    while (!existsSync(ready) && Date.now() < deadline) await sleep(20);
    assert.ok(existsSync(ready), 'the writer wrote everything');
    const changes = await fuseChanges(s.storePath, m.workspaceId);
    const byPath = Object.fromEntries(changes.changes.map((c) => [c.path, c.change]));
    assert.equal(byPath['big.bin'], 'modified', 'status sees the overwrite of a file still open');
    assert.equal(byPath['new.bin'], 'added');
    const c = await commitFuse(s.storePath, m.workspaceId);
    assert.equal(c.outcome, 'Created');
    writeFileSync(stop, '');
    const r = await w;
    assert.equal(r.code, 0, r.stderr);
    const want = expected();
    const head = s.client.branch('main').headCommitId!;
    assert.equal(sha(s.client.cat(head, 'big.bin')), sha(want.big), 'the overwrite is in the Commit');
    assert.equal(sha(s.client.cat(head, 'new.bin')), sha(want.newBin), 'every 4 KiB write of the open file is in the Commit');
    assert.equal(s.client.cat(head, 'log').toString(), want.log, 'appends through two handles, in order');
    // After close nothing more arrives: the next commit finds nothing new.
    assert.equal((await commitFuse(s.storePath, m.workspaceId)).outcome, 'UpToDate');
  });
  assertIntact(s.client);
}

for (const spec of ['+writeback', '-writeback']) {
  test(`kernel features ${spec}: commits and status hold every returned write of files still open`, async () => {
    await withFeatures(spec, openWriterScenario);
  });
}

test('with the writeback cache: POSIX basics, git, tar and SQLite in a mount behave as without it', async () => {
  await withFeatures('+writeback', async (s) => {
    await withMount(s, (m) => posixScenario(m));
    // Each scenario makes its own Store and daemon, which starts with the same features.
    await gitScenario();
    await tarScenario();
    await sqliteScenario();
  });
});

test('writeback on: 4 KiB writes reach the daemon as large WRITEs; off: one WRITE each', async () => {
  for (const on of [true, false]) {
    await withFeatures(on ? '+writeback' : '-writeback', async (s) => {
      await withMount(s, async (m) => {
        await ok('dd', ['if=/dev/zero', `of=${join(m.path, 'z.bin')}`, 'bs=4096', 'count=512', 'status=none']);
        const writes = (await requests(s)).WRITE ?? 0;
        if (on) assert.ok(writes <= 8, `${writes} WRITEs for 512 write(2)s with the writeback cache`);
        else assert.equal(writes, 512);
      });
    });
  }
});

test('maxpages on: 1 MiB WRITEs; off: the kernel’s 128 KiB', async () => {
  for (const on of [true, false]) {
    await withFeatures(`-writeback,${on ? '+' : '-'}maxpages`, async (s) => {
      await withMount(s, async (m) => {
        await ok('dd', ['if=/dev/zero', `of=${join(m.path, 'z.bin')}`, 'bs=1M', 'count=4', 'status=none']);
        assert.equal((await requests(s)).WRITE, on ? 4 : 32);
        const c = await commitFuse(s.storePath, m.workspaceId);
        assert.equal(c.outcome, 'Created');
        assert.equal(s.client.cat(s.client.branch('main').headCommitId!, 'z.bin').length, 4 << 20);
      });
    });
  }
});

/** Writes a file of 8 MiB through a write-only handle (1 MiB WRITEs, each the writer's own pages with directwrite). */
const directWrite = (f: string) => `
import os
w = os.open(${JSON.stringify(f)}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(8):
    os.write(w, bytes([65 + i]) * (1 << 20))
os.close(w)
`;

/** A reader's cached pages of the file, overwritten in the middle through a write-only handle. */
const directOverwrite = (f: string) => `
import os
r = os.open(${JSON.stringify(f)}, os.O_RDONLY)
assert os.pread(r, 8 << 20, 0) == b"".join(bytes([65 + i]) * (1 << 20) for i in range(8))
w = os.open(${JSON.stringify(f)}, os.O_WRONLY)
os.pwrite(w, b"z" * 10000, 3 * 4096 + 17)
assert os.pread(r, 10000, 3 * 4096 + 17) == b"z" * 10000, "stale cached pages after a direct write"
os.close(w)
os.close(r)
`;

test('directwrite on and off: 1 MiB WRITEs through a write-only open; a reader with cached pages sees an overwrite through another write-only open; the commit holds the bytes', async () => {
  for (const on of [true, false]) {
    await withFeatures(`-writeback,${on ? '+' : '-'}directwrite`, async (s) => {
      await withMount(s, async (m) => {
        const f = join(m.path, 'd.bin');
        await ok('python3', ['-c', directWrite(f)]);
        // With directwrite a write(2) from a buffer that is not page-aligned spans 257 pages:
        // the kernel sends it as two WRITEs.
        const writes = (await requests(s)).WRITE;
        if (on) assert.ok(writes === 8 || writes === 16, `${writes} WRITEs`);
        else assert.equal(writes, 8);
        await ok('python3', ['-c', directOverwrite(f)]);
        const c = await commitFuse(s.storePath, m.workspaceId);
        assert.equal(c.outcome, 'Created');
        const want = Buffer.concat(Array.from({ length: 8 }, (_, i) => Buffer.alloc(1 << 20, 65 + i)));
        want.fill('z', 3 * 4096 + 17, 3 * 4096 + 17 + 10000);
        assert.equal(sha(s.client.cat(s.client.branch('main').headCommitId!, 'd.bin')), sha(want));
      });
      assertIntact(s.client);
    });
  }
});

test('readdirplus on: a listing carries attributes (no LOOKUP per name); off: plain READDIR', async () => {
  for (const on of [true, false]) {
    await withFeatures(on ? '+readdirplus' : '-readdirplus', async (s) => {
      await withMount(s, async (m) => {
        const listing = await ok('ls', ['-l', join(m.path, 'lib')]);
        assert.match(listing, /a\.txt/);
        const r = await requests(s);
        if (on) assert.ok((r.READDIRPLUS ?? 0) > 0 && !r.READDIR, JSON.stringify(r));
        else assert.ok((r.READDIR ?? 0) > 0 && !r.READDIRPLUS, JSON.stringify(r));
      });
    });
  }
});

test('an unknown feature name is refused with ERR_INVALID_ARGUMENT and a hint', () => {
  assert.deepEqual(kernelFeatures('-readdirplus, +writeback'), { readdirplus: false, maxpages: true, writeback: true, passthrough: false, directwrite: true });
  assert.throws(
    () => kernelFeatures('+passthru'),
    (e) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT') && (e.details as { name?: string }).name === 'passthru' && /writeback/.test(String((e.details as { hint?: string }).hint)),
  );
});

test('writeback is off by default (docs/DECISIONS.md: an untar is slower with it)', () => {
  assert.deepEqual(kernelFeatures(''), { readdirplus: true, maxpages: true, writeback: false, passthrough: false, directwrite: true });
});

/** truncate(2) to the current size, then the mtime `stat` shows (python: ns). */
const sameSizeTruncate = (file: string, keepOpen: boolean) => `
import os, time
f = ${JSON.stringify(file)}
with open(f, "wb") as h: h.write(b"hello")
fd = os.open(f, os.O_RDONLY) if ${keepOpen ? 'True' : 'False'} else None
before = os.stat(f).st_mtime_ns
time.sleep(0.05)
os.truncate(f, 5)
after = os.stat(f).st_mtime_ns
print(after > before, os.stat(f).st_size)
`;

for (const spec of ['+writeback', '-writeback']) {
  test(`kernel features ${spec}: truncate(2) to the current size marks mtime, as on a plain directory`, async () => {
    await withFeatures(spec, async (s) => {
      await withMount(s, async (m) => {
        assert.equal((await ok('python3', ['-c', sameSizeTruncate(join(m.path, 'same'), false)])).trim(), 'True 5');
        const writes = (await requests(s)).WRITE ?? 0;
        assert.ok(writes >= 1);
        const c = await commitFuse(s.storePath, m.workspaceId);
        assert.equal(c.outcome, 'Created');
        assert.equal(s.client.cat(s.client.branch('main').headCommitId!, 'same').toString(), 'hello');
      });
      assertIntact(s.client);
    });
  });
}

/** Writes through a shared mapping whose descriptor is closed already; the mapping stays until `stop`. */
const mapper = (file: string, ready: string, stop: string) => `
import mmap, os, time
fd = os.open(${JSON.stringify(file)}, os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192)
os.close(fd)
m[4096:4101] = b"hello"
open(${JSON.stringify(ready)}, "w").close()
while not os.path.exists(${JSON.stringify(stop)}):
    time.sleep(0.02)
m.close()
`;

test('writeback on: a commit holds what a shared mapping wrote after its descriptor was closed, and files closed before it', async () => {
  await withFeatures('+writeback', async (s) => {
    await withMount(s, async (m) => {
      await ok('sh', ['-c', `printf closed > '${join(m.path, 'closed.txt')}'`]);
      const ready = join(s.dir, 'mapper-ready');
      const stop = join(s.dir, 'stop-mapper');
      const w = run('python3', ['-c', mapper(join(m.path, 'mapped.bin'), ready, stop)]);
      const deadline = Date.now() + 120_000;
      while (!existsSync(ready) && Date.now() < deadline) await sleep(20);
      assert.ok(existsSync(ready), 'the mapper wrote');
      assert.equal((await commitFuse(s.storePath, m.workspaceId)).outcome, 'Created');
      writeFileSync(stop, '');
      assert.equal((await w).code, 0);
      const head = s.client.branch('main').headCommitId!;
      assert.equal(s.client.cat(head, 'closed.txt').toString(), 'closed');
      const mapped = s.client.cat(head, 'mapped.bin');
      assert.equal(mapped.length, 8192);
      assert.equal(mapped.subarray(4096, 4101).toString(), 'hello', 'the mapped page was flushed before the commit');
    });
    assertIntact(s.client);
  });
});
