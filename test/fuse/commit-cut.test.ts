// Commits while a process keeps writing: every Commit is a consistent cut (each write(2) is in
// it whole or not at all, records stay in order) and the writer never sees an error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { commitFuse } from '../../lib/fuse/index.js';
import { run, setupStore, withMount } from './helpers.js';
import { fillBasic } from './scenarios.js';

const RECORD = 4096;

/** Each record: "seq:<n>:" then filler, ending in the first 16 hex digits of its sha256. */
const writer = (dir: string, stop: string) => `
import hashlib, os
fd = os.open(${JSON.stringify(join(dir, 'log.bin'))}, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
big = os.open(${JSON.stringify(join(dir, 'big.bin'))}, os.O_WRONLY)
n = 0
while not os.path.exists(${JSON.stringify(stop)}):
    body = (b"seq:%d:" % n).ljust(${RECORD - 16}, b".")
    rec = body + hashlib.sha256(body).hexdigest()[:16].encode()
    assert os.write(fd, rec) == ${RECORD}
    # rewrite a page of the stored large file in place, too
    os.pwrite(big, rec, (n % 512) * ${RECORD})
    n += 1
os.close(fd)
os.close(big)
print(n)
`;

function checkRecords(data: Buffer): number {
  assert.equal(data.length % RECORD, 0, 'no partial record');
  const n = data.length / RECORD;
  for (let i = 0; i < n; i++) {
    const rec = data.subarray(i * RECORD, (i + 1) * RECORD);
    const body = rec.subarray(0, RECORD - 16);
    assert.equal(rec.subarray(RECORD - 16).toString(), createHash('sha256').update(body).digest('hex').slice(0, 16), `record ${i} whole`);
    assert.ok(body.toString('latin1').startsWith(`seq:${i}:`), `record ${i} in order`);
  }
  return n;
}

test('commits taken while a process writes are consistent cuts; the writer never fails', async () => {
  const s = await setupStore(fillBasic, 'layerfs-cut-');
  await withMount(s, async (m) => {
    // The writer runs until the commits are taken, however slow the machine: each commit cuts
    // through writes in flight.
    const stop = join(s.dir, 'stop-writer');
    const w = run('python3', ['-c', writer(m.path, stop)]);
    const commits: string[] = [];
    await sleep(200);
    for (let i = 0; i < 12; i++) {
      const c = await commitFuse(s.storePath, m.workspaceId);
      if (c.outcome === 'Created') commits.push(c.commitId);
      await sleep(150);
    }
    writeFileSync(stop, '');
    const r = await w;
    assert.equal(r.code, 0, r.stderr);
    const written = Number(r.stdout.trim());
    assert.ok(written > 100, `writer wrote ${written} records`);
    assert.ok(commits.length >= 5, `${commits.length} commits`);
    let last = 0;
    for (const id of commits) {
      const n = checkRecords(s.client.cat(id, 'log.bin'));
      assert.ok(n >= last, 'later commits hold at least as many records');
      last = n;
      const big = s.client.cat(id, 'big.bin');
      for (let p = 0; p < 512; p++) {
        const rec = big.subarray(p * RECORD, (p + 1) * RECORD);
        if (!rec.subarray(0, 4).equals(Buffer.from('seq:'))) continue;
        const body = rec.subarray(0, RECORD - 16);
        assert.equal(rec.subarray(RECORD - 16).toString(), createHash('sha256').update(body).digest('hex').slice(0, 16), `page ${p} of big.bin whole`);
      }
    }
    const final = await commitFuse(s.storePath, m.workspaceId);
    assert.ok(final.outcome === 'Created' || final.outcome === 'UpToDate');
    assert.equal(checkRecords(s.client.cat(s.client.branch('main').headCommitId!, 'log.bin')), written);
  });
  assert.equal(s.client.verify().ok, true);
});
