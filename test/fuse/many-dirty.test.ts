// A FUSE Workspace takes more dirty files than its daemon may open: spool files are reopened on
// demand (a bounded descriptor cache), so writes, the commit and the end all succeed. The daemon
// runs under `prlimit --nofile`, and the test reads the limit back from /proc so it cannot pass
// against a daemon that was not limited.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuseAvailable, detachStale } from '../../lib/fuse/index.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { setupStore } from './helpers.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const skip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;
const worker = fileURLToPath(new URL('./many-dirty-worker.ts', import.meta.url));
const LIMIT = 256;
const FILES = 1500;

test(`a FUSE Workspace commits ${FILES} dirty files with its daemon limited to ${LIMIT} descriptors`, { skip, timeout: 300_000 }, async () => {
  const s = await setupStore((src) => writeFileSync(join(src, 'README'), 'readme\n'), 'layerfs-many-dirty-');
  s.client.close();
  const at = join(s.dir, 'ws');
  try {
    const r = spawnSync('prlimit', [`--nofile=${LIMIT}:${LIMIT}`, process.execPath, ...nodeArgs(worker, s.storePath, at, String(FILES))], {
      encoding: 'utf8',
      // Every written byte goes to a spool file: the case that used to hold one descriptor per file.
      env: { ...process.env, LAYERFS_SPOOL_MEMORY_MIB: '0' },
      timeout: 280_000,
    });
    assert.equal(r.status, 0, `worker failed: ${r.stderr.slice(-3000)}`);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!);
    assert.equal(out.nofile, LIMIT, 'the daemon runs under the limit');
    assert.equal(out.reread, true);
    assert.ok(out.spooled >= FILES, `spool files before the commit: ${out.spooled}`);
    // What stays is the files made ahead of use (spool.ts: at most 384).
    assert.ok(out.left < 400, `spool files left 10 s after the commit: ${out.left} of ${out.spooled}`);
    assert.equal(out.outcome, 'Created');
    assert.ok(out.changedPaths >= FILES, `changedPaths ${out.changedPaths}`);
    assert.equal(out.end, 'Ended');
  } finally {
    await detachStale(at).catch(() => false);
  }
  assertStoreIntact(s.storePath);
});
