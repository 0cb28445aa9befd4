/**
 * Many processes committing to one Branch: exactly the Created commits form its history. In
 * strict mode every other attempt gets HeadMoved; by default every commit lands (reconciled
 * with the moved head). No SQLITE_BUSY or untyped error escapes.
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
import { nodeArgs } from '../../lib/workspace/node-child.js';

const worker = fileURLToPath(new URL('./concurrency-worker.ts', import.meta.url));
const PROCS = Number(process.env.LAYERFS_CONCURRENCY_PROCS ?? 8);
const COMMITS = Number(process.env.LAYERFS_CONCURRENCY_COMMITS ?? 50);

async function setup(): Promise<{ dir: string; store: string; wsRoot: string }> {
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
  return { dir, store, wsRoot };
}

type WorkerResult = { created: string[]; headMoved: number; reconciled: number; errors: string[] };

async function runWorkers(store: string, wsRoot: string, procs: number, commits: number, mode: string): Promise<WorkerResult[]> {
  const run = promisify(execFile);
  const results = await Promise.all(
    Array.from({ length: procs }, (_, i) => run(process.execPath, nodeArgs(worker, store, 'shared', wsRoot, String(i), String(commits), mode), { maxBuffer: 1 << 20 })),
  );
  return results.map((r) => JSON.parse(r.stdout.trim()) as WorkerResult);
}

test(`strict: ${PROCS} processes × ${COMMITS} commits on one Branch`, { timeout: 600_000 }, async () => {
  const { store, wsRoot } = await setup();
  const parsed = await runWorkers(store, wsRoot, PROCS, COMMITS, 'strict');
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

const RPROCS = Number(process.env.LAYERFS_RECONCILE_PROCS ?? 4);
const RCOMMITS = Number(process.env.LAYERFS_RECONCILE_COMMITS ?? 15);

test(`reconciling: ${RPROCS} processes × ${RCOMMITS} commits on one Branch, every one lands`, { timeout: 600_000 }, async () => {
  const { store, wsRoot } = await setup();
  const parsed = await runWorkers(store, wsRoot, RPROCS, RCOMMITS, 'reconcile');
  assert.deepEqual(parsed.flatMap((p) => p.errors), []);
  assert.equal(parsed.reduce((a, p) => a + p.headMoved, 0), 0);
  const created = parsed.flatMap((p) => p.created);
  assert.equal(created.length, RPROCS * RCOMMITS);
  const c2 = Client.connect(store);
  const log = c2.log('shared').map((x) => x.id);
  assert.deepEqual([...log].sort(), [...created].sort());
  // Every worker's last write is in the head: nothing was lost or overwritten.
  for (let i = 0; i < RPROCS; i++) assert.equal(c2.cat('shared', `w${i}.txt`).toString(), `worker ${i} attempt ${RCOMMITS - 1}\n`);
  assertIntact(c2);
  c2.close();
});
