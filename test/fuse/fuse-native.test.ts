// The fuse-native backend (libfuse 2, path-based) runs the shared scenarios too. Its known gaps
// are asserted here so a fix shows up: a change of only the mtime does not reach the overlay,
// RENAME_NOREPLACE is refused by the kernel (EINVAL; tools fall back), times are milliseconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ok, run, setupStore, withMount } from './helpers.js';
import { fillBasic, gitScenario, posixScenario, sqliteScenario, stormScenario } from './scenarios.js';

test('fuse-native: files, directories, links, modes, xattrs and errors', async () => {
  const s = await setupStore(fillBasic, 'layerfs-fn-');
  await withMount(
    s,
    async (m) => {
      assert.equal(m.backend, 'fuse-native');
      await posixScenario(m);
    },
    { backend: 'fuse-native' },
  );
});

test('fuse-native: git equals a plain directory', () => gitScenario('fuse-native'));
test('fuse-native: sqlite3 equals a plain directory', () => sqliteScenario('fuse-native'));
test('fuse-native: rename/link/unlink storm equals a plain directory', () => stormScenario('fuse-native'));

test('fuse-native: documented gaps (mtime-only changes, RENAME_NOREPLACE, millisecond times)', async () => {
  const s = await setupStore(fillBasic, 'layerfs-fn-gaps-');
  await withMount(
    s,
    async (m) => {
      const f = join(m.path, 'f');
      await writeFile(f, 'x');
      const before = (await stat(f, { bigint: true })).mtimeNs;
      await ok('touch', ['-m', '-d', '@1000000000', f]);
      assert.equal((await stat(f, { bigint: true })).mtimeNs, before, 'libfuse 2 drops a change of the mtime alone');
      await ok('touch', ['-d', '@1000000000.123456789', f]);
      assert.equal((await stat(f, { bigint: true })).mtimeNs, 1_000_000_000_123_000_000n, 'both times: set, to the millisecond');
      // (Over an existing name the VFS answers EEXIST itself; to a free name libfuse 2 is asked.)
      const r = await run('python3', ['-c', `import ctypes,os,sys\nlibc=ctypes.CDLL(None,use_errno=True)\nr=libc.renameat2(-100,b"${f}",-100,b"${join(m.path, 'fresh')}",1)\nsys.exit(ctypes.get_errno() if r else 0)`]);
      assert.equal(r.code, 22, 'renameat2(RENAME_NOREPLACE) is EINVAL through libfuse 2');
    },
    { backend: 'fuse-native' },
  );
});
