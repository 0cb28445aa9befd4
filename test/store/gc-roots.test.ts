// gc keeps what the other features name: a checkpoint's state (past the retention policy) and a
// Branch with checkpoints can be deleted (they go with it; the state then goes to gc).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

async function history(dir: string): Promise<{ c: Client; first: string }> {
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'a\n');
  const c = Client.create(join(dir, 's.sqlite'));
  await c.initLayerStack({ name: 'demo', source: src });
  c.forkBranch({ name: 'main', layer: 'demo' });
  const ws = await c.createWorkspace('main', { at: join(dir, 'ws'), projection: 'materialize' });
  let first = '';
  for (let i = 0; i < 4; i++) {
    // Random content: each Commit's file is an object no other state shares.
    writeFileSync(join(dir, 'ws', 'big.bin'), seededBytes(100 + i, 200_000));
    const r = await c.commitWorkspace(ws.id, { message: `commit ${i}` });
    assert.equal(r.outcome, 'Created');
    if (i === 0 && r.outcome === 'Created') first = r.commit.id;
  }
  await c.endWorkspace(ws.id);
  return { c, first };
}

test('a checkpoint keeps its state past the retention policy; deleting its Branch lets gc reclaim it', async () => {
  const dir = tempDir();
  const { c, first } = await history(dir);
  try {
    c.rewind('main', first, { message: 'back' });
    c.checkpoint('main', 'first-try');
    // The rewind made the first state the head again: move on so only the checkpoint keeps it.
    const ws = await c.createWorkspace('main', { at: join(dir, 'ws2'), projection: 'materialize' });
    writeFileSync(join(dir, 'ws2', 'big.bin'), seededBytes(999, 200_000));
    assert.equal((await c.commitWorkspace(ws.id)).outcome, 'Created');
    await c.endWorkspace(ws.id);
    c.setRetention({ branchCommits: 1 });
    await c.gc();
    assert.ok(c.cat(first, 'big.bin').equals(seededBytes(100, 200_000)), 'the checkpointed state reads after gc');
    assertIntact(c);

    const before = c.info().objects;
    await c.deleteBranch('main');
    await c.gc();
    assert.ok(c.info().objects < before, 'with its Branch gone, the checkpoint went too and gc reclaimed the state');
    assertIntact(c);
  } finally {
    c.close();
  }
});
