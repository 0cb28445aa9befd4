// A large commit does not stop the mount: between the commit's steps the serving thread answers
// requests that only read the overlay (lookups, attributes, listings), while a request that
// would change it (a write) waits for the commit's end and lands after it, so the Commit is the
// state from when it started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, promises as fsp, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commitFuse, daemonStatus, fuseAvailable } from '../../lib/fuse/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes } from '../helpers/tmp.js';
import { run, setupStore, withMount } from './helpers.js';

const skip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;
const FILES = 10_000;
const PROBE = `
import os, sys, time
root, stop = sys.argv[1], sys.argv[2]
n = 0
while not os.path.exists(stop):
    t = time.time() * 1000
    try:
        os.stat(os.path.join(root, "missing-%d" % n))
    except FileNotFoundError:
        pass
    print("%.1f %.1f" % (t, time.time() * 1000), flush=True)
    n += 1
    time.sleep(0.01)
`;

test('lookups and listings are answered during a large commit; a write made meanwhile lands after it', { skip, timeout: 600_000 }, async () => {
  const s = await setupStore((src) => {
    mkdirSync(join(src, 'logs'));
    writeFileSync(join(src, 'logs', 'log.txt'), 'before\n');
  }, 'layerfs-commit-serving-');
  const gen = join(s.dir, 'gen');
  for (let i = 0; i < FILES; i++) {
    const sub = join(gen, `d${Math.floor(i / 200)}`);
    if (i % 200 === 0) mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, `f${i}.js`), seededBytes(i, 64 + ((i * 7919) % 8192)));
  }
  await withMount(s, async (m) => {
    const cp = await run('cp', ['-r', `${gen}/.`, `${m.path}/`]);
    assert.equal(cp.code, 0, cp.stderr);
    // A separate process stats fresh names (never cached by the kernel: each one is a LOOKUP the
    // daemon answers) every 10 ms and prints each one's time, until told to stop. In the root
    // directory, where the daemon's wake-up lookups go; the append below opens a file in logs/,
    // whose lock the kernel holds while that request waits for the commit's end.
    const stop = join(s.dir, 'stop-probe');
    const probe = run('python3', ['-c', PROBE, m.path, stop]);
    await new Promise((r) => setTimeout(r, 300));
    const t0 = performance.now();
    const committing = commitFuse(s.storePath, m.workspaceId);
    // Sent once the commit runs (some lookups answered after it started): it waits for the commit's end, then lands.
    await new Promise((r) => setTimeout(r, 200));
    const appending = fsp.appendFile(join(m.path, 'logs', 'log.txt'), 'during\n');
    const c = await committing;
    const commitMs = performance.now() - t0;
    writeFileSync(stop, '');
    await appending;
    const probed = await probe;
    assert.equal(probed.code, 0, probed.stderr);
    // Each line: start and end (ms since the epoch) of one stat.
    const lat = probed.stdout.trim().split('\n').map((l) => l.split(' ').map(Number) as [number, number]);
    const commitStart = Date.now() - (performance.now() - t0);
    const answered = lat.filter(([a, b]) => a >= commitStart && b <= commitStart + commitMs).map(([a, b]) => b - a);
    assert.equal(c.outcome, 'Created');
    const requests = (await daemonStatus(s.storePath))!.mounts[0]!.requests ?? {};
    process.stdout.write(`# commit of ${FILES} files ${commitMs.toFixed(0)} ms; ${answered.length} lookups answered before it ended (slowest ${Math.max(0, ...answered).toFixed(0)} ms); daemon: ${requests.ANSWERED_DURING_COMMIT} answered, ${requests.HELD_DURING_COMMIT} held during the commit\n`);
    // A commit that long gives the lookups time to be answered in it.
    if (commitMs > 1000) assert.ok(answered.length >= 3, `${answered.length} lookups answered during a ${commitMs.toFixed(0)} ms commit`);
    if (commitMs > 1000) assert.ok((requests.ANSWERED_DURING_COMMIT ?? 0) > 0, 'the daemon answered requests during the commit');
    // The Commit holds log.txt whole: as it was before (the append waited) or with the append, never part of it.
    const committed = s.client.cat(c.outcome === 'Created' ? c.commitId : '', 'logs/log.txt').toString();
    assert.ok(committed === 'before\n' || committed === 'before\nduring\n', JSON.stringify(committed));
    {
      // The append did land, and the next commit holds it.
      for (let i = 0; i < 200 && (await fsp.readFile(join(m.path, 'logs', 'log.txt'), 'utf8')) !== 'before\nduring\n'; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(await fsp.readFile(join(m.path, 'logs', 'log.txt'), 'utf8'), 'before\nduring\n');
      const next = await commitFuse(s.storePath, m.workspaceId);
      if (committed === 'before\n') assert.equal(next.outcome, 'Created');
      assert.equal(s.client.cat(s.client.branch('main').headCommitId!, 'logs/log.txt').toString(), 'before\nduring\n');
    }
    // Every file of the first commit is there.
    const listed = await fsp.readdir(join(m.path, 'd0'));
    assert.equal(listed.length, 200);
  });
  assertIntact(s.client);
  s.client.close();
});
