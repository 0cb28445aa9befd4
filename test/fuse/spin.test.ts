// The serving threads' poll of /dev/fuse before they block (lib/fuse/kernel-spin.ts): the gate's
// arithmetic on /proc/stat, and real mounts whose daemon polls always (the gate's idle CPUs
// needed set to 0, as a busy CI machine would otherwise turn it off) or never.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commitFuse, daemonStatus } from '../../lib/fuse/index.js';
import { idleCpus, parseCpuTimes, SpinGate, spinSetting } from '../../lib/fuse/kernel-spin.js';
import { fuseSpinStats } from '../../lib/native/index.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { run, setupStore, withMount } from './helpers.js';

test('the gate reads /proc/stat and counts its own polling as idle', () => {
  const real = parseCpuTimes(readFileSync('/proc/stat', 'latin1'));
  assert.ok(real && real.total > 0 && real.idle >= 0 && real.idle <= real.total);
  assert.equal(parseCpuTimes('intr 1 2 3\n'), null);
  assert.equal(parseCpuTimes('cpu 1 2 x 4 5 6 7 8\n'), null);
  const a = parseCpuTimes('cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n')!;
  assert.deepEqual(a, { idle: 850, total: 1000 });
  // 2 CPUs, 50 ticks over a window, 10 of them idle: 0.4 CPUs idle; 100 ms of polling adds 10 ticks.
  const b = { idle: a.idle + 10, total: a.total + 50 };
  assert.equal(idleCpus(a, b, 0, 2), 0.4);
  assert.equal(idleCpus(a, b, 100_000_000, 2), 0.8);
  assert.equal(idleCpus(a, a, 0, 2), 2, 'no tick went by');
  assert.equal(idleCpus(a, { idle: a.idle + 50, total: a.total + 50 }, 500_000_000, 2), 2, 'never above the CPUs');
  assert.equal(spinSetting(1), 0, 'one CPU never polls');
});

test('the gate polls while half a CPU was idle over its window, and not otherwise', () => {
  let stat = 'cpu 0 0 0 0 0 0 0 0\n';
  const gate = new SpinGate(40_000, 2, 0.5, () => stat);
  gate.tick(0);
  assert.equal(fuseSpinStats().spinNs, 0, 'no window measured yet');
  stat = 'cpu 40 0 0 10 0 0 0 0\n'; // 0.4 CPUs idle
  gate.tick(100);
  assert.equal(fuseSpinStats().spinNs, 0, 'within the window: unchanged');
  gate.tick(300);
  assert.equal(fuseSpinStats().spinNs, 0, 'busy: off');
  stat = 'cpu 70 0 0 30 0 0 0 0\n'; // 0.8 CPUs idle since
  gate.tick(600);
  assert.equal(fuseSpinStats().spinNs, 40_000, 'idle: on');
  stat = 'cpu 100 0 0 30 0 0 0 0\n';
  gate.tick(900);
  assert.equal(fuseSpinStats().spinNs, 0, 'busy again: off');
  const unreadable = new SpinGate(40_000, 2, 0.5, () => {
    throw new Error('no /proc');
  });
  unreadable.tick(0);
  unreadable.tick(1000);
  assert.equal(fuseSpinStats().spinNs, 0, 'without /proc/stat: never');
});

async function roundTrips(spinUs: string): Promise<{ spins: number; caught: number }> {
  const before = { us: process.env.LAYERFS_FUSE_SPIN_US, idle: process.env.LAYERFS_FUSE_SPIN_IDLE };
  process.env.LAYERFS_FUSE_SPIN_US = spinUs;
  process.env.LAYERFS_FUSE_SPIN_IDLE = '0';
  try {
    const s = await setupStore((src) => writeFileSync(join(src, 'f.txt'), 'stored\n'), 'layerfs-spin-');
    const out = await withMount(s, async (m) => {
      // 2,000 round trips that no cache answers, then files made, written, renamed and removed.
      const py = `import os,sys
p=sys.argv[1]
for i in range(2000): os.listxattr(os.path.join(p,'f.txt'))
for i in range(300):
    q=os.path.join(p,'n%d'%i)
    with open(q,'w') as f: f.write('x'*i)
    os.rename(q,q+'.done')
    if i%3==0: os.unlink(q+'.done')
print(len(os.listdir(p)))`;
      const r = await run('python3', ['-c', py, m.path]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim(), String(1 + 200));
      const c = await commitFuse(s.storePath, m.workspaceId);
      assert.equal(c.outcome, 'Created');
      const st = await daemonStatus(s.storePath);
      assert.ok(st?.spin, 'the daemon reports its polling');
      return { spins: st.spin.spins, caught: st.spin.caught };
    });
    assertStoreIntact(s.storePath);
    const files = s.client.ls('main', '').map((e) => e.name);
    assert.equal(files.length, 201);
    assert.ok(files.includes('n299.done') && !files.includes('n0.done') && files.includes('f.txt'));
    return out;
  } finally {
    for (const [k, v] of [['LAYERFS_FUSE_SPIN_US', before.us], ['LAYERFS_FUSE_SPIN_IDLE', before.idle]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

test('a daemon that polls before it blocks answers every request, and its polls find requests', async () => {
  const { spins, caught } = await roundTrips('200');
  assert.ok(spins > 1000, `polls begun: ${spins}`);
  assert.ok(caught > 0 && caught <= spins, `polls that found a request: ${caught} of ${spins}`);
});

test('LAYERFS_FUSE_SPIN_US=0: the serving threads block at once', async () => {
  const { spins, caught } = await roundTrips('0');
  assert.equal(spins, 0);
  assert.equal(caught, 0);
});
