// Requests that would change the overlay, read during a commit, are held in their request
// buffers until it ends, and no more than the bound (LAYERFS_FUSE_HELD, here 2) at once: with
// that many held, the serving thread stops reading until the commit's end and the rest wait in
// the kernel's queue. Every write still lands after the commit, whole.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commitFuse, daemonStatus, fuseAvailable } from '../../lib/fuse/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes } from '../helpers/tmp.js';
import { run, setupStore, withMount } from './helpers.js';

const skip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;
const FILES = 6_000;
const WRITERS = 8;
const HELD = 2;
// WRITERS threads, each appending to its own file at once; prints when each one started (ms since the epoch).
const WRITER = `
import os, sys, threading, time
root, n = sys.argv[1], int(sys.argv[2])
starts = [0.0] * n
def append(i):
    starts[i] = time.time() * 1000
    with open(os.path.join(root, "w%d" % i), "a") as f:
        f.write("during\\n")
ts = [threading.Thread(target=append, args=(i,)) for i in range(n)]
for t in ts: t.start()
for t in ts: t.join()
print(" ".join("%.1f" % s for s in starts), flush=True)
`;

test(`more requests to hold during a commit than the bound (${HELD}): reading stops at the bound, and every write lands after the commit`, { skip, timeout: 600_000 }, async () => {
  const s = await setupStore((src) => {
    mkdirSync(join(src, 'logs'));
    for (let i = 0; i < WRITERS; i++) writeFileSync(join(src, 'logs', `w${i}`), 'before\n');
  }, 'layerfs-commit-held-');
  const gen = join(s.dir, 'gen');
  for (let i = 0; i < FILES; i++) {
    const sub = join(gen, `d${Math.floor(i / 200)}`);
    if (i % 200 === 0) mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, `f${i}.js`), seededBytes(i, 64 + ((i * 7919) % 8192)));
  }
  // The daemon starts with the first mount below and takes this from the environment.
  const saved = process.env.LAYERFS_FUSE_HELD;
  process.env.LAYERFS_FUSE_HELD = String(HELD);
  try {
    await withMount(s, async (m) => {
      const cp = await run('cp', ['-r', `${gen}/.`, `${m.path}/`]);
      assert.equal(cp.code, 0, cp.stderr);
      const t0 = Date.now();
      const committing = commitFuse(s.storePath, m.workspaceId);
      await new Promise((r) => setTimeout(r, 200));
      const writing = run('python3', ['-c', WRITER, join(m.path, 'logs'), String(WRITERS)]);
      const c = await committing;
      const commitEnd = Date.now();
      const w = await writing;
      assert.equal(w.code, 0, w.stderr);
      const starts = w.stdout.trim().split(' ').map(Number);
      assert.equal(c.outcome, 'Created');
      const requests = (await daemonStatus(s.storePath))!.mounts[0]!.requests ?? {};
      const sentDuring = starts.every((t) => t > t0 && t < commitEnd - 300);
      process.stdout.write(`# commit ${commitEnd - t0} ms; writers sent during it: ${sentDuring}; daemon: ${requests.HELD_DURING_COMMIT} held, peak ${requests.HELD_PEAK_DURING_COMMIT}, reading stopped ${requests.COMMIT_READS_STOPPED} times, ${requests.ANSWERED_DURING_COMMIT} answered\n`);
      assert.ok((requests.HELD_PEAK_DURING_COMMIT ?? 0) <= HELD, `at most ${HELD} requests held at once`);
      // All writers began well before the commit ended: their requests waited in it, more than the bound.
      if (sentDuring) {
        assert.equal(requests.HELD_PEAK_DURING_COMMIT, HELD);
        assert.ok((requests.COMMIT_READS_STOPPED ?? 0) > 0, 'reading stopped at the bound');
      }
      for (let i = 0; i < WRITERS; i++) {
        // The Commit holds each file whole: as before (the append waited) or with the append.
        const committed = s.client.cat(c.outcome === 'Created' ? c.commitId : '', `logs/w${i}`).toString();
        assert.ok(committed === 'before\n' || committed === 'before\nduring\n', `w${i}: ${JSON.stringify(committed)}`);
        if (sentDuring) assert.equal(committed, 'before\n', `w${i} was written after the commit`);
        assert.equal(readFileSync(join(m.path, 'logs', `w${i}`), 'utf8'), 'before\nduring\n', `w${i} landed`);
      }
      const next = await commitFuse(s.storePath, m.workspaceId);
      if (sentDuring) assert.equal(next.outcome, 'Created');
      for (let i = 0; i < WRITERS; i++) assert.equal(s.client.cat(s.client.branch('main').headCommitId!, `logs/w${i}`).toString(), 'before\nduring\n');
    });
  } finally {
    if (saved === undefined) delete process.env.LAYERFS_FUSE_HELD;
    else process.env.LAYERFS_FUSE_HELD = saved;
  }
  assertIntact(s.client);
  s.client.close();
});
