// A large commit that starts while the daemon is large ends the serving threads kept idle for the
// next mount and starts one again after it (lib/fuse/kernel-spare.ts yieldingSpares). The bounds
// are set low here (LAYERFS_SPARE_YIELD_MIB, LAYERFS_SPARE_YIELD_RECORDS), so a commit of a few
// files yields: the commits stay exact, the daemon reports each yield, and a ready thread is back
// for the next mount; a commit under the records bound keeps them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commitFuse, daemonStatus, unmountWorkspace } from '../../lib/fuse/index.js';
import type { DaemonStatus } from '../../lib/fuse/protocol.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { mountBranch, setupStore, withMount } from './helpers.js';

async function until(storePath: string, what: string, ok: (s: DaemonStatus) => boolean): Promise<DaemonStatus> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const s = await daemonStatus(storePath);
    if (s && ok(s)) return s;
    if (Date.now() > deadline) throw new Error(`${what}: not within 20 s (${JSON.stringify(s?.spares)})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs `fn` with the daemon's yield bounds set (the daemon each test starts inherits them). */
async function withBounds<T>(mib: string, records: string, fn: () => Promise<T>): Promise<T> {
  const before = { mib: process.env.LAYERFS_SPARE_YIELD_MIB, records: process.env.LAYERFS_SPARE_YIELD_RECORDS };
  process.env.LAYERFS_SPARE_YIELD_MIB = mib;
  process.env.LAYERFS_SPARE_YIELD_RECORDS = records;
  try {
    return await fn();
  } finally {
    for (const [k, v] of [['LAYERFS_SPARE_YIELD_MIB', before.mib], ['LAYERFS_SPARE_YIELD_RECORDS', before.records]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

test('a large commit of a large daemon ends its idle serving threads and one is ready again after it', async () => {
  await withBounds('0', '1', async () => {
    const s = await setupStore((src) => writeFileSync(join(src, 'a.txt'), 'stored\n'), 'layerfs-spare-');
    s.client.forkBranch({ name: 'other', layer: s.layer });
    await withMount(s, async (m) => {
      await until(s.storePath, 'a ready spare before the commit', (st) => (st.spares?.loaded ?? 0) >= 1);
      for (let i = 1; i <= 2; i++) {
        writeFileSync(join(m.path, 'a.txt'), `edit ${i}\n`);
        const c = await commitFuse(s.storePath, m.workspaceId);
        assert.equal(c.outcome, 'Created');
        const st = await daemonStatus(s.storePath);
        assert.equal(st?.spares?.yielded, i, `commit ${i} made the idle threads yield`);
        assert.equal(s.client.cat('main', 'a.txt').toString(), `edit ${i}\n`);
        await until(s.storePath, `a ready spare after commit ${i}`, (x) => (x.spares?.loaded ?? 0) >= 1);
      }
      // The thread started after the commits serves the next mount.
      const other = await mountBranch(s, { branch: 'other' });
      try {
        assert.equal(readFileSync(join(other.path, 'a.txt'), 'utf8'), 'stored\n');
        writeFileSync(join(other.path, 'b.txt'), 'new\n');
        assert.equal((await commitFuse(s.storePath, other.workspaceId)).outcome, 'Created');
        assert.equal(s.client.cat('other', 'b.txt').toString(), 'new\n');
      } finally {
        await unmountWorkspace(s.storePath, other.workspaceId, { discard: true });
      }
    });
    assertStoreIntact(s.storePath);
  });
});

test('a commit of fewer records than the bound keeps the idle serving threads, however large the daemon', async () => {
  await withBounds('0', '1000', async () => {
    const s = await setupStore((src) => writeFileSync(join(src, 'a.txt'), 'stored\n'), 'layerfs-spare-');
    await withMount(s, async (m) => {
      await until(s.storePath, 'a ready spare before the commits', (st) => (st.spares?.loaded ?? 0) >= 1);
      for (let i = 1; i <= 3; i++) {
        writeFileSync(join(m.path, `n${i}.txt`), `new ${i}\n`);
        assert.equal((await commitFuse(s.storePath, m.workspaceId)).outcome, 'Created');
        const st = await daemonStatus(s.storePath);
        assert.equal(st?.spares?.yielded, 0, `commit ${i} of one file kept them`);
        assert.ok((st?.spares?.loaded ?? 0) >= 1, `commit ${i}: the ready spare is still there`);
      }
      assert.equal(s.client.cat('main', 'n3.txt').toString(), 'new 3\n');
    });
    assertStoreIntact(s.storePath);
  });
});
