/**
 * SIGKILL during `db gc` at seeded points (inside a deleting transaction, between two, while it
 * removes Commit rows nothing keeps, during the rewrite of rows mostly garbage): the Store is
 * valid after each kill, every kept state exports as before, and a gc run afterwards finishes the
 * work, leaving exactly the objects and Commit rows an uninterrupted gc leaves.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { makeHistory, makeSource } from '../helpers/repack.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { walkForCompare, type WalkRecord } from '../helpers/treewalk.js';
import { rng } from '../helpers/random.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const worker = fileURLToPath(new URL('./gc-worker.ts', import.meta.url));
const seed = Number(process.env.LAYERFS_TEST_SEED ?? 23);
console.log(`gc kill seed=${seed} (rerun with LAYERFS_TEST_SEED=${seed})`);

/** A history with garbage: two Branches deleted, and a policy that prunes older Commits of `work`. */
async function fixture(dir: string): Promise<string> {
  const src = join(dir, 'src');
  makeSource(src, 120);
  const store = join(dir, 's.sqlite');
  await makeHistory(store, src, join(dir, 'ws'), 4);
  const c = Client.connect(store);
  for (const name of ['gone-1', 'gone-2']) {
    c.forkBranch({ name, layer: 'main' });
    const ws = join(dir, `ws-${name}`);
    await c.createWorkspace(name, { at: ws });
    for (let r = 0; r < 3; r++) {
      mkdirSync(join(ws, `n${r}`), { recursive: true });
      for (let f = 0; f < 20; f++) writeFileSync(join(ws, `n${r}`, `f${f}.txt`), `${name} ${r} ${f}\n`.repeat(30 + f));
      writeFileSync(join(ws, `n${r}`, 'blob.bin'), seededBytes(name.length * 100 + r, 150_000));
      assert.equal((await c.commitWorkspace(ws)).outcome, 'Created');
    }
    await c.endWorkspace(ws);
    await c.deleteBranch(name);
  }
  c.setRetention({ branchCommits: 2, olderThanMs: 0 });
  c.close();
  return store;
}

function keptTrees(store: string, dir: string): Map<string, WalkRecord[]> {
  const c = Client.connect(store, { readonly: true });
  const out = new Map<string, WalkRecord[]>();
  try {
    const ids = [...c.layers().map((l) => l.id), ...c.log('work').filter((x) => !x.pruned).map((x) => x.id)];
    for (const id of ids) {
      const target = join(dir, `export-${id.slice(0, 12)}-${Math.random().toString(16).slice(2)}`);
      c.export(id, target);
      out.set(id, walkForCompare(target));
    }
  } finally {
    c.close();
  }
  return out;
}

function objectIds(store: string, table = 'objects'): string[] {
  const s = Store.open(store, { readonly: true });
  try {
    return (s.db.prepare(`SELECT id FROM ${table} ORDER BY id`).pluck().all() as Buffer[]).map((b) => b.toString('hex'));
  } finally {
    s.close();
  }
}

function runWorker(store: string, batch: number, mode: string, onLine: (line: string, kill: () => void) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, nodeArgs(worker, store, String(batch), mode), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let pending = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      pending += d.toString();
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        onLine(line, () => child.kill('SIGKILL'));
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code !== 0 && signal !== 'SIGKILL') reject(new Error(`gc worker exited ${code}: ${err}`));
      else resolve(out);
    });
  });
}

test(`SIGKILL mid-gc at seeded points: the Store stays valid, kept states read as before, a rerun finishes (seed ${seed})`, { timeout: 300_000 }, async () => {
  const dir = tempDir();
  const store = await fixture(dir);
  const trees = keptTrees(store, dir);
  const reference = join(dir, 'reference.sqlite');
  copyFileSync(store, reference);
  const ref = Client.connect(reference);
  const full = await ref.gc();
  assertIntact(ref);
  ref.close();
  assert.ok(full.deletedObjects > 50 && full.rowsDeleted > 0, JSON.stringify(full));
  const expected = objectIds(reference);
  const expectedCommits = objectIds(reference, 'commits');
  assert.equal(full.commitsRemoved, 6);

  const next = rng(seed);
  let killedMidway = 0;
  for (let trial = 0; trial < 6; trial++) {
    // Each trial starts from the same garbage. Even trials: the worker kills itself at a seeded
    // progress report (between two transactions); odd ones: the parent kills it a seeded few ms
    // after one (usually inside a transaction).
    const trialStore = join(dir, `trial-${trial}.sqlite`);
    copyFileSync(store, trialStore);
    const phase = (['sweep', 'commits', 'rewrite'] as const)[trial % 3]!;
    // The rewrite phase reports twice (start, end): only its first report is inside gc. The
    // Commit rows (6) go in one or two transactions: a report at the start and after each.
    const after = phase === 'rewrite' ? 1 : phase === 'commits' ? 1 + Math.floor(next() * 2) : 1 + Math.floor(next() * 5);
    const delay = Math.floor(next() * 4);
    let lines = 0;
    const out = await runWorker(trialStore, phase === 'commits' ? 4 : 4 + Math.floor(next() * 12), trial % 2 === 0 ? `kill:${phase}:${after}` : 'once', (line, kill) => {
      if (trial % 2 === 0 || !line.startsWith(`progress ${phase}`)) return;
      if (++lines === after) setTimeout(kill, delay);
    });
    if (!out.includes('done')) killedMidway++;
    assertStoreIntact(trialStore);
    if (trial < 3) assert.deepEqual(keptTrees(trialStore, dir), trees, `trial ${trial}`);
    // Running gc again finishes the work: exactly what an uninterrupted gc leaves.
    const c = Client.connect(trialStore);
    await c.gc();
    assert.equal((await c.gc({ dryRun: true })).garbageObjects, 0);
    assertIntact(c);
    c.close();
    assert.deepEqual(objectIds(trialStore), expected, `trial ${trial}`);
    assert.deepEqual(objectIds(trialStore, 'commits'), expectedCommits, `trial ${trial}`);
  }
  assert.ok(killedMidway >= 4, `killed mid-gc in ${killedMidway} of 6 trials`);
  const c = Client.connect(store);
  await c.gc();
  c.close();
  assert.deepEqual(keptTrees(store, dir), trees);
});
