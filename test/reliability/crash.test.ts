/**
 * SIGKILL at random points of import, commit, fork and add: afterwards the Store opens,
 * verify passes, every head points at a complete state, and the interrupted operation either
 * happened completely or not at all. Seeded, with a bounded number of trials.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';
import { rng } from '../helpers/random.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const worker = fileURLToPath(new URL('./crash-worker.ts', import.meta.url));
const TRIALS = Number(process.env.LAYERFS_CRASH_TRIALS ?? 6);

/** Starts the worker, waits until it is ready, lets it run `ms`, then SIGKILLs it. */
function runAndKill(args: string[], ms: number): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, nodeArgs(worker, ...args), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!timer && out.includes('ready')) timer = setTimeout(() => child.kill('SIGKILL'), ms);
    });
    child.stderr.on('data', () => {});
    child.on('exit', () => {
      if (timer) clearTimeout(timer);
      resolve(out);
    });
  });
}

function makeTree(root: string, files: number): void {
  mkdirSync(root, { recursive: true });
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(root, `d${d}`), { recursive: true });
    for (let f = 0; f < files / 10; f++) writeFileSync(join(root, `d${d}`, `f${f}`), seededBytes(d * 1000 + f + 1, 200 + ((d * 7 + f * 13) % 50) * 400));
  }
  writeFileSync(join(root, 'large.bin'), seededBytes(99, 3 << 20));
}

/** The root of every makeTree tree. */
const TREE_ROOT = [...Array.from({ length: 10 }, (_, d) => `d${d}`), 'large.bin'].sort();

function checkStore(store: string): Client {
  const c = Client.connect(store);
  assertIntact(c);
  // Every LayerStack here is an import of makeTree (plus, after an add, the crash worker's
  // committed fN.txt files): complete or absent, never partial.
  for (const s of c.layerStacks()) {
    const names = c.ls(s.name).map((e) => e.name);
    for (const n of TREE_ROOT) assert.ok(names.includes(n), `${s.name} lacks ${n}`);
    for (const n of names) assert.ok(TREE_ROOT.includes(n) || /^f\d+\.txt$/.test(n), `${s.name} has ${n}`);
  }
  for (const b of c.branches()) c.ls(b.id);
  return c;
}

test('SIGKILL during import: the LayerStack exists completely or not at all', { timeout: 300_000 }, async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  makeTree(src, 2000);
  const store = join(dir, 's.sqlite');
  Client.create(store).close();
  const r = rng(7);
  for (let i = 0; i < TRIALS; i++) {
    const out = await runAndKill(['init', store, src, `t${i}`], Math.floor(r() * 1500));
    const c = checkStore(store);
    const exists = c.layerStacks().some((s) => s.name === `t${i}`);
    if (out.includes('done')) assert.ok(exists);
    if (exists) assert.equal(c.ls(`t${i}`).length, 11);
    c.close();
  }
  // The next operation works normally.
  const c = Client.connect(store);
  await c.initLayerStack({ name: 'after', source: src });
  assertIntact(c);
  c.close();
});

test('SIGKILL during commits, forks and adds: heads always point at complete states', { timeout: 300_000 }, async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  makeTree(src, 200);
  const store = join(dir, 's.sqlite');
  const c0 = Client.create(store);
  const layer = (await c0.initLayerStack({ name: 'p', source: src })).layer.id;
  c0.forkBranch({ name: 'main', layer });
  const ws = await c0.createWorkspace('main', { at: join(dir, 'ws') });
  c0.close();
  const r = rng(11);
  let before = 0;
  for (let i = 0; i < TRIALS; i++) {
    const out = await runAndKill(['commit', store, ws.path, ''], 200 + Math.floor(r() * 1500));
    const c = checkStore(store);
    const n = (out.match(/committed/g) ?? []).length;
    const log = c.log('main');
    // Every reported commit is there, and at most one more (killed after COMMIT, before printing).
    assert.ok(log.length >= before + n && log.length <= before + n + 1, `${log.length} commits, ${before} before, ${n} reported`);
    before = log.length;
    for (const commit of log) c.ls(commit.id);
    c.close();
  }
  for (let i = 0; i < Math.ceil(TRIALS / 2); i++) {
    await runAndKill(['fork', store, layer, `k${i}`], Math.floor(r() * 800));
    checkStore(store).close();
  }
  const out = await runAndKill(['add', store, 'main', ''], Math.floor(r() * 50));
  const c = checkStore(store);
  const layers = c.layers({ layerStack: 'p' });
  if (out.includes('done')) assert.equal(layers.length, 2);
  assert.ok(layers.length === 1 || layers.length === 2);
  assert.equal(c.layerStacks()[0]!.headLayerId, layers[layers.length - 1]!.id);
  // The Workspace still commits normally after all of that.
  writeFileSync(join(ws.path, 'final.txt'), 'final');
  const final = await c.commitWorkspace(ws.id);
  assert.ok(final.outcome === 'Created' || final.outcome === 'HeadMoved');
  assertIntact(c);
  c.close();
});
