// A large change written into a FUSE Workspace is stored while it is written (lib/fuse/prestore.ts),
// and the commit takes what was stored only while it still holds: a file changed since is stored
// as it is now, and after a gc (which may have deleted what nobody had published yet) the commit
// stores everything again. Each case commits, compares the Branch with the tree written byte for
// byte, and verifies the Store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { commitFuse, daemonStatus, detachStale, fuseAvailable, stopDaemon } from '../../lib/fuse/index.js';
import { daemonPaths } from '../../lib/fuse/protocol.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { seededBytes } from '../helpers/tmp.js';
import { run, setupStore, walk, type StoreSetup } from './helpers.js';

const skip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;
const FILES = 600;
/**
 * Files the daemon stores ahead: those in spool files, not the first ~4 MiB a mount keeps in
 * memory (spool.ts spoolMemoryBudget), which the commit stores itself.
 */
const AHEAD = FILES / 2;

/** Files of 100 B – 40 KiB (a few of 300 KiB, chunked), in directories of 100; `salt` makes them differ. */
function generate(dir: string, salt: string, count = FILES): void {
  for (let i = 0; i < count; i++) {
    const sub = join(dir, `d${Math.floor(i / 100)}`);
    if (i % 100 === 0) mkdirSync(sub, { recursive: true });
    const size = i % 97 === 0 ? 300_000 : 100 + ((i * 7919) % 40_000);
    const text = `// ${salt} ${i}\n${seededBytes(i, size).toString('base64').slice(0, size)}\n`;
    writeFileSync(join(sub, `f${i}.js`), text);
  }
}

async function counts(s: StoreSetup): Promise<Record<string, number>> {
  return (await daemonStatus(s.storePath))?.mounts[0]?.requests ?? {};
}

/**
 * Waits until the daemon stored at least `files` files ahead and then stored nothing more for a
 * second (or 60 s passed); returns its counts.
 */
async function prestored(s: StoreSetup, files: number): Promise<Record<string, number>> {
  const t0 = performance.now();
  let c = await counts(s);
  let stableSince = performance.now();
  for (;;) {
    await sleep(100);
    const next = await counts(s);
    if (next.PRESTORE_FILES !== c.PRESTORE_FILES) stableSince = performance.now();
    c = next;
    if ((c.PRESTORE_FILES ?? 0) >= files && performance.now() - stableSince >= 1000) return c;
    if (performance.now() - t0 >= 60_000) return c;
  }
}

/** The tree's files as the Branch holds them now, exported, against `expected` (a directory). */
async function assertBranchIs(s: StoreSetup, expected: string): Promise<void> {
  const out = join(s.dir, `export-${Date.now()}`);
  s.client.export('main', out);
  const skipTop = (rel: string) => rel === 'README';
  assert.deepEqual(await walk(out, { skip: skipTop }), await walk(expected, { skip: skipTop }));
}

/** Writes `gen` into the mount as rsync does: each file to a temporary name, then renamed over the old one. */
async function rsync(gen: string, at: string): Promise<void> {
  const r = await run('rsync', ['-a', `${gen}/`, `${at}/`]);
  assert.equal(r.code, 0, r.stderr);
}

interface Case {
  s: StoreSetup;
  /** The Workspace's id and mount point. */
  ws: string;
  at: string;
  /** The tree written into it (generated with salt 'one' or, over a base of 'one', 'second'). */
  gen: string;
}

/**
 * A Store (its Layer the README, or with `overBase` also the tree of salt 'one'), a FUSE
 * Workspace of it, and the tree `gen` to write; the daemon is stopped and the mount detached
 * whatever happens.
 */
async function withCase(overBase: boolean, fn: (c: Case) => Promise<void>): Promise<void> {
  const s = await setupStore((src) => {
    writeFileSync(join(src, 'README'), 'readme\n');
    if (overBase) generate(src, 'one');
  }, 'layerfs-prestore-');
  const at = join(s.dir, 'ws');
  const gen = join(s.dir, 'gen');
  generate(gen, overBase ? 'second' : 'one');
  try {
    const ws = await s.client.createWorkspace('main', { at, projection: 'fuse' });
    await fn({ s, ws: ws.id, at, gen });
  } finally {
    await stopDaemon(s.storePath, { discard: true }).catch(() => {});
    await detachStale(at).catch(() => false);
    s.client.close();
  }
  assertStoreIntact(s.storePath);
}

test('a large change is stored while it is written, and the commit takes it as stored', { skip, timeout: 300_000 }, async () => {
  await withCase(true, async ({ s, ws, at, gen }) => {
    await rsync(gen, at);
    const c = await prestored(s, AHEAD);
    process.stdout.write(`# ${JSON.stringify(Object.fromEntries(Object.entries(c).filter(([k]) => k.startsWith('PRESTORE'))))}\n`);
    assert.ok((c.PRESTORE_FILES ?? 0) >= AHEAD, `stored ahead: ${c.PRESTORE_FILES} of ${FILES} files; daemon.log:\n${readFileSync(daemonPaths(s.storePath).log, 'utf8').slice(-3000)}`);
    assert.ok((c.PRESTORE_FILES ?? 0) <= FILES, `${c.PRESTORE_FILES} files stored ahead for ${FILES} written: some twice`);
    assertStoreIntact(s.storePath);
    const out = await commitFuse(s.storePath, ws);
    assert.equal(out.outcome, 'Created');
    if (out.outcome !== 'Created') return;
    process.stdout.write(`# commit: ${out.prestoredFiles} files taken as stored, ${out.bytesRead} bytes read, ${out.bytesInserted} inserted, ${out.ms} ms\n`);
    // Every file the daemon stored ahead (counted up to the commit's start) was taken as stored.
    assert.equal(out.prestoredFiles, (await counts(s)).PRESTORE_FILES, 'the commit took every file stored ahead as stored');
    await assertBranchIs(s, gen);
    assertStoreIntact(s.storePath);
    assert.equal((await s.client.endWorkspace(ws)).outcome, 'Ended');
  });
});

test('what was stored ahead is not taken for a file changed since, nor after a gc', { skip, timeout: 300_000 }, async () => {
  await withCase(false, async ({ s, ws, at, gen }) => {
    await rsync(gen, at);
    assert.ok(((await prestored(s, AHEAD)).PRESTORE_FILES ?? 0) >= AHEAD);
    // Ten files change after they were stored (in directories past the first ~4 MiB, which the
    // mount keeps in memory): five appended to in place, five replaced by a rename.
    for (let i = 0; i < 5; i++) {
      const d = 3 + (i % 3);
      const rel = join(`d${d}`, `f${d * 100 + 10 + i}.js`);
      appendFileSync(join(gen, rel), `// changed ${i}\n`);
      appendFileSync(join(at, rel), `// changed ${i}\n`);
      const other = join(`d${d}`, `f${d * 100 + 60 + i}.js`);
      writeFileSync(join(gen, other), `replaced ${i}\n`);
      writeFileSync(join(at, `${other}.tmp`), `replaced ${i}\n`);
      renameSync(join(at, `${other}.tmp`), join(at, other));
    }
    let out = await commitFuse(s.storePath, ws);
    assert.equal(out.outcome, 'Created');
    if (out.outcome !== 'Created') return;
    const ahead = (await counts(s)).PRESTORE_FILES ?? 0;
    assert.equal(out.prestoredFiles, ahead - 10, `the commit took ${out.prestoredFiles} files as stored of ${ahead}: all but the ten changed since`);
    await assertBranchIs(s, gen);
    assertStoreIntact(s.storePath);

    // Another change, stored ahead; then a gc, which deletes it (no state reaches it yet).
    const gen2 = join(s.dir, 'gen2');
    generate(gen2, 'second');
    const before = (await counts(s)).PRESTORE_FILES ?? 0;
    await rsync(gen2, at);
    assert.ok(((await prestored(s, before + AHEAD)).PRESTORE_FILES ?? 0) >= before + AHEAD);
    const gc = await s.client.gc();
    process.stdout.write(`# gc after the change was stored ahead: ${gc.deletedObjects} objects deleted in ${gc.transactions} transactions\n`);
    out = await commitFuse(s.storePath, ws);
    assert.equal(out.outcome, 'Created');
    if (out.outcome !== 'Created') return;
    assert.equal(out.prestoredFiles, 0, 'nothing stored before the gc is taken as stored after it');
    await assertBranchIs(s, gen2);
    assertStoreIntact(s.storePath);
    assert.equal((await s.client.endWorkspace(ws)).outcome, 'Ended');
  });
});

test('a daemon killed after storing ahead leaves a valid Store, and gc reclaims what it stored', { skip, timeout: 300_000 }, async () => {
  await withCase(false, async ({ s, ws, at, gen }) => {
    const pid = (await daemonStatus(s.storePath))!.pid;
    await rsync(gen, at);
    assert.ok(((await prestored(s, AHEAD)).PRESTORE_FILES ?? 0) >= AHEAD);
    process.kill(pid, 'SIGKILL');
    await detachStale(at).catch(() => false);
    assertStoreIntact(s.storePath);
    assert.equal((await s.client.endWorkspace(ws, { discard: true })).outcome, 'Ended');
    const gc = await s.client.gc();
    assert.ok(gc.deletedObjects >= AHEAD, `gc deleted ${gc.deletedObjects} objects; the daemon stored ${AHEAD} files or more ahead`);
    assertStoreIntact(s.storePath);
    assert.equal((await s.client.gc({ dryRun: true })).garbageObjects, 0);
  });
});

test('LAYERFS_PRESTORE=0: nothing is stored ahead, and the commit stores the same state', { skip, timeout: 300_000 }, async () => {
  const before = process.env.LAYERFS_PRESTORE;
  process.env.LAYERFS_PRESTORE = '0'; // the daemon this test starts inherits it
  try {
    await withCase(false, async ({ s, ws, at, gen }) => {
      await rsync(gen, at);
      await sleep(1000);
      assert.equal((await counts(s)).PRESTORE_JOBS ?? 0, 0);
      const out = await commitFuse(s.storePath, ws);
      assert.equal(out.outcome, 'Created');
      if (out.outcome !== 'Created') return;
      assert.equal(out.prestoredFiles, 0);
      await assertBranchIs(s, gen);
      assertStoreIntact(s.storePath);
    });
  } finally {
    if (before === undefined) delete process.env.LAYERFS_PRESTORE;
    else process.env.LAYERFS_PRESTORE = before;
  }
});
