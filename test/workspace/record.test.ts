import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { COARSE_TICK_MS, RACY_TICK_MS, racyWaitMs } from '../../lib/workspace/record.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

test('racyWaitMs: how long until a read is a whole tick after a ctime', () => {
  const ms = 1_700_000_000_123;
  const ns = (m: number, extra = 456_789n) => BigInt(m) * 1_000_000n + extra;
  assert.equal(racyWaitMs(0n, ms), 0);
  assert.equal(racyWaitMs(ns(ms), ms), RACY_TICK_MS + 1);
  assert.equal(racyWaitMs(ns(ms - 5), ms), RACY_TICK_MS + 1 - 5);
  assert.equal(racyWaitMs(ns(ms - RACY_TICK_MS - 1), ms), 0);
  assert.equal(racyWaitMs(ns(ms - 1000), ms), 0);
  // Whole-second times: the filesystem's tick is seconds.
  assert.equal(racyWaitMs(ns(1_700_000_000_000, 0n), 1_700_000_000_500), COARSE_TICK_MS + 1 - 500);
});

async function setup() {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  writeFileSync(join(src, 'd/racy.txt'), 'aaaaaaaa');
  writeFileSync(join(src, 'big.bin'), seededBytes(1, 3 * 1024 * 1024 + 17));
  const client = Client.create(join(dir, 'store.sqlite'));
  const init = await client.initLayerStack({ name: 'p', source: src });
  client.forkBranch({ name: 'b', layer: init.layer.id });
  const at = join(dir, 'ws');
  const ws = await client.createWorkspace('b', { at });
  return { client, at, ws };
}

test('a same-size rewrite right after a commit is not cached as clean (racy edit)', async () => {
  const { client, at, ws } = await setup();
  try {
    const file = join(at, 'd/racy.txt');
    // Right after create: the materialized files' tick has passed already.
    assert.ok(Date.now() * 1e6 > Number(lstatSync(file, { bigint: true }).ctimeNs) + RACY_TICK_MS * 1e6);
    for (let round = 0; round < 8; round++) {
      const first = String.fromCharCode(0x61 + ((2 * round + 1) % 26)).repeat(8);
      const second = String.fromCharCode(0x61 + ((2 * round + 2) % 26)).repeat(8);
      writeFileSync(file, first);
      const c1 = await client.commitWorkspace(ws.id);
      assert.equal(c1.outcome, 'Created');
      // Same size, at once: with a coarse clock this can share the first write's timestamps; the
      // commit read the file within its tick, so the stat cache marks it racy (racy.ts).
      writeFileSync(file, second);
      assert.equal((await client.workspaceStatus(ws.id)).clean, false);
      const c2 = await client.commitWorkspace(ws.id);
      assert.equal(c2.outcome, 'Created', `round ${round}: the second write was missed`);
      assert.equal(client.cat('b', 'd/racy.txt').toString(), second);
    }
    assert.equal((await client.workspaceStatus(ws.id)).clean, true);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('a changed file over the in-memory limit is streamed and stored exactly', async () => {
  const { client, at, ws } = await setup();
  try {
    const big = join(at, 'big.bin');
    const data = readFileSync(big);
    data.write('edited in the middle', 2 * 1024 * 1024);
    const grown = Buffer.concat([data, seededBytes(2, 1024 * 1024)]);
    writeFileSync(big, grown);
    writeFileSync(join(at, 'd/racy.txt'), 'small too');
    const r = await client.commitWorkspace(ws.id);
    assert.equal(r.outcome, 'Created');
    assert.ok(client.cat('b', 'big.bin').equals(grown));
    assert.equal(client.cat('b', 'd/racy.txt').toString(), 'small too');
    assert.equal((await client.workspaceStatus(ws.id)).clean, true);
    assertIntact(client);
  } finally {
    client.close();
  }
});
