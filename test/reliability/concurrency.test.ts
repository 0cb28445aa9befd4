/**
 * Many processes committing to one Branch: exactly the Created commits form its history,
 * every other attempt gets HeadMoved, and no SQLITE_BUSY or untyped error escapes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '../../lib/sdk/index.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

const worker = fileURLToPath(new URL('./concurrency-worker.ts', import.meta.url));
const PROCS = Number(process.env.LAYERFS_CONCURRENCY_PROCS ?? 8);
const COMMITS = Number(process.env.LAYERFS_CONCURRENCY_COMMITS ?? 50);

test(`${PROCS} processes × ${COMMITS} commits on one Branch`, { timeout: 600_000 }, async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let i = 0; i < 50; i++) writeFileSync(join(src, `f${i}`), `file ${i}\n`);
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  const layer = (await c.initLayerStack({ name: 'p', source: src })).layer.id;
  c.forkBranch({ name: 'shared', layer });
  c.close();
  const wsRoot = join(dir, 'ws');
  mkdirSync(wsRoot);
  const run = promisify(execFile);
  const results = await Promise.all(
    Array.from({ length: PROCS }, (_, i) => run(process.execPath, ['--import', 'tsx', worker, store, 'shared', wsRoot, String(i), String(COMMITS)], { maxBuffer: 1 << 20 })),
  );
  const parsed = results.map((r) => JSON.parse(r.stdout.trim()) as { created: string[]; headMoved: number; errors: string[] });
  assert.deepEqual(parsed.flatMap((p) => p.errors), []);
  const created = parsed.flatMap((p) => p.created);
  assert.equal(created.length + parsed.reduce((a, p) => a + p.headMoved, 0), PROCS * COMMITS);
  const c2 = Client.connect(store);
  const log = c2.log('shared').map((x) => x.id);
  assert.deepEqual([...log].sort(), [...created].sort());
  assert.ok(created.length >= COMMITS, 'some commits must win');
  assertIntact(c2);
  c2.close();
});
