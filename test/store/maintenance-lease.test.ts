/**
 * gc and repack run one at a time on a Store, across processes (lib/store/maintenance-lease.ts):
 * while one runs, the other (and a second gc) answers ERR_BUSY naming it and its process, and
 * changes nothing; a dry run still runs; a lease whose process was killed is taken over.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { releaseMaintenance, takeMaintenance } from '../../lib/store/maintenance-lease.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { commitVersions, demoStore, pausedGc } from '../helpers/gc-race.js';

/** A Store with garbage (a deleted Branch's Commits) and a gc of it held as its sweep starts, holding the lease. */
async function withPausedGc(fn: (c: Client, gc: Awaited<ReturnType<typeof pausedGc>>) => Promise<void>): Promise<void> {
  const dir = tempDir();
  const { path, c, layer } = await demoStore(dir);
  try {
    await commitVersions(c, dir, 'gone', layer, [0, 1, 2, 3].map((i) => ({ [`f${i}.bin`]: seededBytes(i, 40_000) })));
    await c.deleteBranch('gone', { force: true });
    const gc = await pausedGc(path, dir);
    try {
      await fn(c, gc);
    } finally {
      gc.child.kill('SIGKILL');
    }
    assertIntact(c);
  } finally {
    c.close();
  }
}

async function busy(p: Promise<unknown>, pid: number): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(isLayerFsError(e), String(e));
    assert.equal(e.code, 'ERR_BUSY');
    assert.match(e.message, /db gc is running on this Store/);
    assert.equal((e.details as { pid?: number }).pid, pid);
    return true;
  });
}

test('while gc runs, repack and a second gc answer ERR_BUSY naming it; a dry run runs; afterwards both run', { timeout: 120_000 }, () =>
  withPausedGc(async (c, gc) => {
    await busy(c.repack(), gc.child.pid!);
    await busy(c.gc(), gc.child.pid!);
    assert.equal((await c.gc({ dryRun: true })).outcome, 'DryRun');
    gc.resume();
    assert.equal(await gc.exited, 0);
    assert.equal((await c.repack()).outcome, 'Repacked');
    assert.equal((await c.gc()).outcome, 'Collected');
  }));

test('a lease whose process was killed is taken over: repack runs, then gc finishes the work', { timeout: 120_000 }, () =>
  withPausedGc(async (c, gc) => {
    await busy(c.repack(), gc.child.pid!);
    gc.child.kill('SIGKILL');
    assert.equal(await gc.exited, null);
    assert.equal((await c.repack()).outcome, 'Repacked');
    const r = await c.gc();
    assert.equal(r.outcome, 'Collected');
    assert.ok(r.deletedObjects > 0, 'the killed gc left garbage to delete');
  }));

test('the lease itself: one pass per process too, released only by the pass that took it, taken over from a holder proven gone', () => {
  const dir = tempDir();
  const path = join(dir, 's.sqlite');
  Store.create(path).close();
  const s = Store.open(path);
  try {
    const me = { pid: process.pid, startTime: 'self', bootId: 'b' };
    const alive = { holder: me, gone: () => false };
    const t1 = s.writeSync(() => takeMaintenance(s.db, path, 'gc', alive));
    // A second pass of the same process (another Client) waits its turn as another process's would.
    assert.throws(() => s.writeSync(() => takeMaintenance(s.db, path, 'repack', alive)), (e: unknown) => isLayerFsError(e) && e.code === 'ERR_BUSY' && /db gc is running/.test(e.message));
    s.writeSync(() => releaseMaintenance(s.db, 'not-the-token'));
    assert.throws(() => s.writeSync(() => takeMaintenance(s.db, path, 'repack', alive)), /db gc is running/);
    s.writeSync(() => releaseMaintenance(s.db, t1));
    const t2 = s.writeSync(() => takeMaintenance(s.db, path, 'repack', alive));
    // Its holder proven gone (killed, rebooted): the next pass takes it over.
    const t3 = s.writeSync(() => takeMaintenance(s.db, path, 'gc', { holder: { ...me, pid: me.pid + 1 }, gone: (h) => h.pid === me.pid }));
    assert.notEqual(t3, t2);
    // A row no writer made (damaged JSON) holds nothing.
    s.writeSync(() => s.db.prepare("UPDATE meta SET value = '{not json' WHERE key = 'maintenance'").run());
    const t4 = s.writeSync(() => takeMaintenance(s.db, path, 'gc', alive));
    // Shared holders (fetch, push) wait for gc, share with each other, and hold gc off; one proven gone holds nothing.
    assert.throws(() => s.writeSync(() => takeMaintenance(s.db, path, 'fetch', alive, true)), /db gc is running/);
    s.writeSync(() => releaseMaintenance(s.db, t4));
    const f1 = s.writeSync(() => takeMaintenance(s.db, path, 'fetch', alive, true));
    const f2 = s.writeSync(() => takeMaintenance(s.db, path, 'push', { holder: { ...me, pid: me.pid + 1 }, gone: () => false }, true));
    assert.throws(() => s.writeSync(() => takeMaintenance(s.db, path, 'repack', alive)), /a (fetch|push) is running/);
    s.writeSync(() => releaseMaintenance(s.db, f1));
    assert.throws(() => s.writeSync(() => takeMaintenance(s.db, path, 'repack', alive)), /a push is running/);
    const t5 = s.writeSync(() => takeMaintenance(s.db, path, 'repack', { holder: me, gone: (h) => h.pid !== me.pid }));
    assert.notEqual(t5, f2);
    assert.deepEqual(s.db.prepare("SELECT key FROM meta WHERE key LIKE 'maintenance%'").pluck().all(), ['maintenance']);
  } finally {
    s.close();
  }
  assertStoreIntact(path);
});
