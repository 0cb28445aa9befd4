// A fresh daemon's first mount on a loaded machine. Its serving thread loads its modules and
// opens the Store before it can answer INIT (seconds under tsx when the machine is busy), so the
// daemon starts that thread first thing (kernel-spare.ts), and the mount fails only when nothing
// makes progress (kernel-mount.ts), not after a fixed wall time that a busy machine overruns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { commitFuse } from '../../lib/fuse/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { ok, setupStore, withMount } from './helpers.js';
import { fillBasic } from './scenarios.js';

/** Busy loops, one more than cores: they run only until the mount is up. */
function hogs(n: number): ChildProcess[] {
  return Array.from({ length: n }, () => spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
}

test('the first mount of a fresh daemon comes up while the CPUs are saturated', async () => {
  const s = await setupStore(fillBasic, 'layerfs-mstart-');
  const busy = hogs(cpus().length + 1);
  try {
    const t0 = performance.now();
    await withMount(s, async (m) => {
      const ms = performance.now() - t0;
      for (const h of busy) h.kill('SIGKILL');
      console.log(`first mount (daemon start included) ${ms.toFixed(0)} ms at load ${loadavg()[0]!.toFixed(1)}`);
      assert.match(await ok('cat', [`${m.path}/lib/a.txt`]), /./);
      await ok('sh', ['-c', `echo new > '${m.path}/new.txt'`]);
      assert.equal((await commitFuse(s.storePath, m.workspaceId)).outcome, 'Created');
    });
  } finally {
    for (const h of busy) h.kill('SIGKILL');
  }
  assert.equal(s.client.cat(s.client.branch('main').headCommitId!, 'new.txt').toString(), 'new\n');
  assertIntact(s.client);
});
