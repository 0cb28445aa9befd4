/**
 * Readers in child processes (Branch history, Layers, ls/cat, diff, export) while a writer
 * commits and adds: every state any reader sees is one complete state — each file of it carries
 * the same sequence number — and the diff of consecutive states is exactly what was written.
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
import { writeState } from './readers-states.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const worker = fileURLToPath(new URL('./readers-worker.ts', import.meta.url));
const COMMITS = Number(process.env.LAYERFS_READERS_COMMITS ?? 30);
const READERS = 2;

test(`${READERS} readers while a writer makes ${COMMITS} Commits: every state seen is complete`, { timeout: 300_000 }, async (t) => {
  const dir = tempDir();
  const src = join(dir, 'src');
  writeState(src, 0);
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  const layer = (await c.initLayerStack({ name: 'p', source: src })).layer.id;
  c.forkBranch({ name: 'main', layer });
  await c.createWorkspace('main', { at: join(dir, 'ws') });
  c.close();
  const stop = join(dir, 'stop');
  const run = promisify(execFile);
  const abort = new AbortController();
  const readers = Array.from({ length: READERS }, (_, i) => {
    const out = join(dir, `out${i}`);
    mkdirSync(out);
    return run(process.execPath, nodeArgs(worker, 'read', store, stop, out), { maxBuffer: 1 << 20, signal: abort.signal });
  });
  try {
    await run(process.execPath, nodeArgs(worker, 'write', store, '', String(COMMITS)));
  } catch (e) {
    abort.abort();
    await Promise.allSettled(readers);
    throw e;
  } finally {
    writeFileSync(stop, '');
  }
  const results = (await Promise.all(readers)).map((r) => JSON.parse(r.stdout.trim()) as { checked: number; diffs: number; exports: number; passes: number; distinct: number; errors: string[] });
  for (const r of results) t.diagnostic(`reader: ${r.checked} states checked (${r.distinct} distinct), ${r.diffs} diffs, ${r.exports} exports in ${r.passes} passes`);
  assert.deepEqual(
    results.flatMap((r) => r.errors),
    [],
  );
  // The last pass of each reader saw every Commit and Layer.
  for (const r of results) assert.ok(r.distinct >= COMMITS + 1 + COMMITS / 10, `${r.distinct} distinct states`);
  const c2 = Client.connect(store);
  assert.equal(c2.log('main').length, COMMITS);
  assertIntact(c2);
  c2.close();
});
