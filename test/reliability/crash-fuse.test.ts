/**
 * SIGKILL of the daemon serving a FUSE Workspace (kernel backend) at seeded random points of a
 * commit: afterwards the Store opens and verifies, the Branch head is the old Commit or a
 * complete new one (never part of the commit), the stale mount answers ENOTCONN and the next
 * daemon start detaches it, and the next mount and commit work normally.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '../../lib/sdk/index.js';
import { commitFuse, ensureDaemon, fuseAvailable, stopDaemon, unmountWorkspace } from '../../lib/fuse/index.js';
import { seededBytes } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';
import { mountBranch, setupStore, type Mounted } from '../fuse/helpers.js';
import { processGone } from '../helpers/process-gone.js';
import { rng } from '../helpers/random.js';

const TRIALS = Number(process.env.LAYERFS_FUSE_CRASH_TRIALS ?? 5);
const FILES = 120;

/** What trial t writes into the mount: a directory of small files, a large file, the marker. */
function trialFiles(t: number): Map<string, Buffer> {
  const m = new Map<string, Buffer>();
  for (let i = 0; i < FILES; i++) m.set(`t${t}/f${i}`, seededBytes(t * 1000 + i + 1, 100 + ((i * 37) % 20) * 150));
  m.set(`big${t}.bin`, seededBytes(77 + t, 2 << 20));
  m.set('marker', Buffer.from(`trial ${t}\n`));
  return m;
}

async function writeTrial(root: string, t: number): Promise<void> {
  await mkdir(join(root, `t${t}`));
  for (const [p, b] of trialFiles(t)) await writeFile(join(root, p), b);
}

/** The head holds the base files and exactly the committed trials, each complete. */
function checkHead(c: Client, committed: number[]): void {
  const head = c.branch('main').headCommitId ?? c.branch('main').baseLayerId;
  const names = c
    .ls(head)
    .map((e) => e.name)
    .sort();
  const want = ['README', ...(committed.length ? ['marker'] : []), ...committed.flatMap((t) => [`t${t}`, `big${t}.bin`])].sort();
  assert.deepEqual(names, want);
  if (committed.length) assert.equal(c.cat(head, 'marker').toString(), `trial ${committed[committed.length - 1]}\n`);
  for (const t of committed) {
    const files = trialFiles(t);
    assert.equal(c.ls(head, `t${t}`).length, FILES, `trial ${t} directory complete`);
    assert.ok(c.cat(head, `big${t}.bin`).equals(files.get(`big${t}.bin`)!), `trial ${t} large file`);
    for (const i of [0, FILES >> 1, FILES - 1]) assert.ok(c.cat(head, `t${t}/f${i}`).equals(files.get(`t${t}/f${i}`)!));
  }
}

test('SIGKILL of the FUSE daemon during commits: all or nothing, stale mount cleaned, next commit works', { timeout: 300_000, skip: fuseAvailable().ok ? false : 'no FUSE here' }, async (t) => {
  const s = await setupStore((src) => writeFileSync(join(src, 'README'), 'readme\n'), 'layerfs-fusecrash-');
  const r = rng(1234);
  const committed: number[] = [];
  let m: Mounted | undefined;
  try {
    // Calibration: how long one such commit takes here, unkilled (trial 0).
    m = await mountBranch(s, { backend: 'kernel' });
    await writeTrial(m.path, 0);
    const t0 = performance.now();
    assert.equal((await commitFuse(s.storePath, m.workspaceId)).outcome, 'Created');
    const commitMs = performance.now() - t0;
    committed.push(0);
    t.diagnostic(`an unkilled commit takes ${commitMs.toFixed(0)} ms`);
    let slowExits = 0;
    const outcomes: string[] = [];
    for (let trial = 1; trial <= TRIALS; trial++) {
      await writeTrial(m.path, trial);
      // Stratified: trial k dies somewhere in the k-th slice of 1.2 × the commit's duration.
      const delay = Math.floor((((trial - 1 + r()) / TRIALS) * 1.2 * commitMs));
      const commit = commitFuse(s.storePath, m.workspaceId).then(
        (x) => x.outcome,
        (e: { code?: string }) => `error ${e.code ?? 'untyped'}`,
      );
      await sleep(delay);
      process.kill(m.daemonPid, 'SIGKILL');
      slowExits += (await processGone(m.daemonPid)).leaderZombieFirst ? 1 : 0;
      const outcome = await commit;
      outcomes.push(`${delay} ms: ${outcome}`);
      assert.ok(outcome === 'Created' || outcome.startsWith('error '), outcome);

      // The mount is stale until the next daemon start detaches it.
      await assert.rejects(stat(join(m.path, 'marker')), (e: NodeJS.ErrnoException) => e.code === 'ENOTCONN', 'stale mount');
      const st = await ensureDaemon(s.storePath);
      assert.deepEqual(st.recovered?.cleaned, [m.path]);
      assert.deepEqual(await readdir(m.path), []);

      // All or nothing: the head is the previous state or this trial complete.
      const c = Client.connect(s.storePath);
      try {
        assertIntact(c);
        const head = c.branch('main').headCommitId;
        const log = c.log('main');
        assert.equal(log.length, committed.length + (log.length > committed.length ? 1 : 0), 'at most one new Commit');
        if (log.length > committed.length) committed.push(trial);
        else assert.notEqual(outcome, 'Created', 'a Created commit was lost');
        assert.ok(head);
        checkHead(c, committed);
      } finally {
        c.close();
      }
      await stopDaemon(s.storePath, { discard: true });
      m = await mountBranch(s, { backend: 'kernel', name: `mnt-${trial}` });
    }
    t.diagnostic(`kills: ${outcomes.join('; ')}; committed trials ${committed.join(',')}`);
    t.diagnostic(`daemon exits where the thread-group leader was a zombie before the last thread ended: ${slowExits}`);
    // The next operation works normally on the remounted Workspace.
    await writeFile(join(m.path, 'after.txt'), 'after\n');
    assert.equal((await commitFuse(s.storePath, m.workspaceId)).outcome, 'Created');
    assert.equal((await unmountWorkspace(s.storePath, m.workspaceId)).outcome, 'Unmounted');
    m = undefined;
    const c = Client.connect(s.storePath);
    try {
      assert.equal(c.cat('main', 'after.txt').toString(), 'after\n');
      assertIntact(c);
    } finally {
      c.close();
    }
  } finally {
    if (m) await unmountWorkspace(s.storePath, m.workspaceId, { discard: true }).catch(() => {});
    await stopDaemon(s.storePath, { discard: true }).catch(() => {});
    s.client.close();
  }
});
