// Cell: `db gc` (issue 23). Mode `history`: the store_gc history (fixtures/gc-history.ts) of
// --branches Branches × --commits Commits, each Branch committed through a materialized
// Workspace; then all but --keep Branches deleted, `gc` timed (ms, vacuum apart as vacuumMs), the
// Store file after it against a fresh Store that holds only the kept Branches' histories
// (freshBytes), verify, and every kept Commit's root id equal in both Stores (the same trees).
// Mode `nogarbage`: import the tree fixture --dir, then time `verify` and `gc` (nothing to reclaim).
//   node --import tsx bench/cells/store_gc.ts --cell layerfs-gc --tmp SCRATCH --tier T --mode history --branches 50 --commits 20 --keep 5
//   node --import tsx bench/cells/store_gc.ts --cell layerfs-gc --tmp SCRATCH --tier T --mode nogarbage --dir FIXTURE

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { storeFiles } from '../lib/measure.js';
import { applyCommit, writeBase } from '../fixtures/gc-history.js';
import { chunkCount, ensureGcStore, gcStoreParams } from '../fixtures/gc-store.js';
import { duBytes, timeExternal } from '../lib/cell.js';
import { git, gitEnv, gitTimed } from '../lib/git.js';
import { fileURLToPath } from 'node:url';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';
import { Client } from '../../lib/sdk/index.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const GC_OPTIONS = { mode: { type: 'string', default: 'history' }, branches: { type: 'string', default: '50' }, commits: { type: 'string', default: '20' }, keep: { type: 'string', default: '5' } } as const;

/** Builds a Store with the base and Branches `branches` (indices) of the history. */
async function build(store: string, base: string, scratch: string, branches: number[], commits: number): Promise<Client> {
  const c = Client.create(store);
  const init = await c.initLayerStack({ name: 'base', source: base });
  for (const b of branches) {
    c.forkBranch({ name: `b${b}`, layer: init.layer.id });
    const ws = await c.createWorkspace(`b${b}`, { at: path.join(scratch, `ws-${path.basename(store)}-${b}`) });
    for (let k = 0; k < commits; k++) {
      applyCommit(ws.path, b, k);
      const r = await c.commitWorkspace(ws.id);
      if (r.outcome !== 'Created') throw new Error(`b${b} commit ${k}: ${r.outcome}`);
    }
    await c.endWorkspace(ws.id);
  }
  return c;
}

async function layerfsGc(a: Given<typeof GC_OPTIONS, 'tmp'>): Promise<CellResult> {
  const tmp = path.resolve(a.tmp!);
  if (a.mode === 'nogarbage') {
    if (a.dir === undefined) throw new Error('--dir is required with --mode nogarbage');
    const store = path.join(tmp, 'nogarbage.layerfs');
    const c = Client.create(store);
    await c.initLayerStack({ name: 'tree', source: path.resolve(a.dir!) });
    c.close();
    const c2 = Client.connect(store);
    let t = performance.now();
    const v = c2.verify();
    const verifyMs = performance.now() - t;
    if (!v.ok) throw new Error('verify failed');
    t = performance.now();
    const g = await c2.gc();
    const ms = performance.now() - t;
    if (g.deletedObjects !== 0) throw new Error(`gc deleted ${g.deletedObjects} objects of a Store without garbage`);
    const objects = c2.info().objects;
    c2.close();
    return { ms: Math.round(ms), verifyMs: Math.round(verifyMs), gcOverVerify: Math.round((ms / verifyMs) * 1000) / 1000, markMs: Math.round(g.markMs), objects, storeBytes: storeFiles(store).bytes };
  } else {
    const branches = Number(a.branches);
    const commits = Number(a.commits);
    const keep = Number(a.keep);
    const base = path.join(tmp, 'base');
    writeBase(base);
    let t = performance.now();
    const c = await build(path.join(tmp, 'gc.layerfs'), base, tmp, [...Array(branches).keys()], commits);
    const buildMs = performance.now() - t;
    t = performance.now();
    for (let b = keep; b < branches; b++) await c.deleteBranch(`b${b}`);
    const deleteMs = performance.now() - t;
    c.close();
    const before = storeFiles(path.join(tmp, 'gc.layerfs')).bytes;
    const c2 = Client.connect(path.join(tmp, 'gc.layerfs'));
    const g = await c2.gc({ vacuum: true });
    const v = c2.verify();
    if (!v.ok) throw new Error('verify failed after gc');
    const roots = [...Array(keep).keys()].map((b) => c2.log(`b${b}`).map((x) => x.rootId));
    const objects = c2.info().objects;
    c2.close();
    const after = storeFiles(path.join(tmp, 'gc.layerfs')).bytes;
    const f = await build(path.join(tmp, 'fresh.layerfs'), base, tmp, [...Array(keep).keys()], commits);
    const same = [...Array(keep).keys()].every((b) => JSON.stringify(f.log(`b${b}`).map((x) => x.rootId)) === JSON.stringify(roots[b]));
    f.close();
    if (!same) throw new Error('a kept Branch differs from the fresh Store’s replay of it');
    const fresh = storeFiles(path.join(tmp, 'fresh.layerfs')).bytes;
    fs.rmSync(path.join(tmp, 'fresh.layerfs'), { force: true });
    return {
      ms: Math.round(g.ms - g.vacuumMs),
      vacuumMs: Math.round(g.vacuumMs),
      markMs: Math.round(g.markMs),
      sweepMs: Math.round(g.sweepMs),
      rewriteMs: Math.round(g.rewriteMs),
      buildMs: Math.round(buildMs),
      deleteMs: Math.round(deleteMs),
      branches,
      commits,
      keep,
      deletedObjects: g.deletedObjects,
      rowsDeleted: g.rowsDeleted,
      rowsRewritten: g.rowsRewritten,
      transactions: g.transactions,
      objects,
      beforeBytes: before,
      storeBytes: after,
      freshBytes: fresh,
      overFresh: Math.round((after / fresh) * 1000) / 1000,
      verifiedObjects: v.objectsChecked,
    };
  }
}

// Cell: the git peer of layerfs-gc's `history` mode. The same history (fixtures/gc-history.ts) as
// a git repository: the base committed on `main`, each Branch a git branch of --commits commits
// (`git add -A && git commit`); then all but --keep branches deleted with `git branch -D` and
// `git reflog expire --expire=now --all && git gc --prune=now` timed (ms). Reports .git bytes
// before and after.
//   node --import tsx bench/cells/store_gc.ts --cell git-gc --tmp SCRATCH --tier T --branches 50 --commits 20 --keep 5

async function gitGc(a: Given<typeof GC_OPTIONS, 'tmp'>): Promise<CellResult> {
  const tmp = path.resolve(a.tmp!);
  const branches = Number(a.branches);
  const commits = Number(a.commits);
  const keep = Number(a.keep);
  const work = path.join(tmp, 'work');
  fs.mkdirSync(work);
  const gitDir = path.join(tmp, 'repo.git');
  const env = gitEnv(gitDir, work);
  git(['init', '-q', '-b', 'main'], env, work);
  writeBase(work);
  git(['add', '-A'], env, work);
  git(['commit', '-q', '-m', 'base'], env, work);
  const t = performance.now();
  for (let b = 0; b < branches; b++) {
    git(['checkout', '-q', '-b', `b${b}`, 'main'], env, work);
    for (let k = 0; k < commits; k++) {
      applyCommit(work, b, k);
      git(['add', '-A'], env, work);
      git(['commit', '-q', '-m', `b${b} ${k}`], env, work);
    }
  }
  const buildMs = performance.now() - t;
  git(['checkout', '-q', 'main'], env, work);
  for (let b = keep; b < branches; b++) git(['branch', '-q', '-D', `b${b}`], env, work);
  const beforeBytes = duBytes(gitDir);
  const g = gitTimed('git -c gc.auto=0 reflog expire --expire=now --all && git -c gc.auto=0 gc -q --prune=now', env, work);
  return { ms: Math.round(g.ms), maxRssMiB: g.maxRssMiB, buildMs: Math.round(buildMs), branches, commits, keep, beforeBytes, storeBytes: duBytes(gitDir) };
}

// Cell: peak RSS of `db gc` on a generated Store of about --objects objects (issue 23: ≤ 256 MiB
// at 10 million), half of them garbage: fixtures/gc-store.ts (a real Store of Layers, Branches
// and Commits, generated once, verified, and cached). A copy of it is collected by `db gc` in a
// process of its own under /usr/bin/time: ms and the gc figures are that process's, maxRssMiB
// /usr/bin/time's maximum resident set, vmHwmMiB its own VmHWM read at the end. Then every chunk
// of a kept state must still be there and every chunk of the deleted Branches gone (a count by
// kind), and with --verify 1 the collected Store is verified whole.
//   node --import tsx bench/cells/store_gc.ts --cell layerfs-gc-big --tmp SCRATCH --tier T --objects 10000000
const GC_BIG_OPTIONS = { objects: { type: 'string', default: '200000' }, verify: { type: 'string', default: '0' }, run: { type: 'string' }, out: { type: 'string' } } as const;

function vmHwmMiB(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function gcBigMeasure(a: Given<typeof GC_BIG_OPTIONS, never>, tier: string): Promise<CellResult> {
  if (a.run !== undefined) {
    // The measured process: gc alone.
    const c = Client.connect(a.run);
    const t = performance.now();
    const r = await c.gc();
    const ms = performance.now() - t;
    c.close();
    fs.writeFileSync(a.out!, JSON.stringify({ ...r, wallMs: ms, vmHwmMiB: vmHwmMiB() }));
    process.exit(0);
  }
  const p = gcStoreParams(Number(a.objects));
  const fx = ensureGcStore(p);
  const tmp = path.resolve(a.tmp!);
  const store = path.join(tmp, 'big.layerfs');
  fs.copyFileSync(fx.store, store);
  const before = storeFiles(store).bytes;
  const out = path.join(tmp, 'gc.json');
  const load = os.loadavg()[0]!;
  const run = timeExternal([process.execPath, ...nodeArgs(fileURLToPath(import.meta.url), '--cell', 'layerfs-gc-big', '--run', store, '--out', out, '--tier', tier)]);
  const loadAfter = os.loadavg()[0]!;
  const r = JSON.parse(fs.readFileSync(out, 'utf8')) as Record<string, number>;
  const chunks = chunkCount(store);
  const c = Client.connect(store, { readonly: true });
  const kept = (p.files + (p.branches - p.deleted) * p.commits) * p.chunks;
  if (chunks !== kept) throw new Error(`after gc the Store holds ${chunks} chunks; the kept states have ${kept}`);
  let verifyMs: number | undefined;
  if (a.verify === '1') {
    const t = performance.now();
    const v = c.verify();
    verifyMs = Math.round(performance.now() - t);
    if (!v.ok) throw new Error(`verify failed after gc: ${JSON.stringify(v.damaged.slice(0, 3))}`);
  }
  c.close();
  const m = fx.manifest as unknown as Record<string, number>;
  return {
    ms: Math.round(r.wallMs!),
    maxRssMiB: Math.round(run.maxRssMiB * 10) / 10,
    vmHwmMiB: Math.round(r.vmHwmMiB! * 10) / 10,
    objects: r.objects,
    liveObjects: r.liveObjects,
    garbageObjects: r.garbageObjects,
    deletedObjects: r.deletedObjects,
    commitsRemoved: r.commitsRemoved,
    markMs: Math.round(r.markMs!),
    sweepMs: Math.round(r.sweepMs!),
    transactions: r.transactions,
    generateMs: Math.round(m.generateMs!),
    generateWriteMs: Math.round(m.writeMs!),
    generateVerifyMs: Math.round(m.verifyMs!),
    generatedReused: fx.reused,
    verifyAfterMs: verifyMs,
    loadStart: Math.round(load * 10) / 10,
    loadEnd: Math.round(loadAfter * 10) / 10,
    beforeBytes: before,
    storeBytes: storeFiles(store).bytes,
  };
}

export const gcHistory = defineCell({
  file: import.meta.url,
  id: 'layerfs-gc',
  tool: 'layerfs',
  required: ['tmp'],
  args: GC_OPTIONS,
  run: layerfsGc,
  peers: [{ id: 'git-gc', tool: 'git', run: gitGc }],
});

export const gcBig = defineCell({
  file: import.meta.url,
  id: 'layerfs-gc-big',
  tool: 'layerfs',
  args: GC_BIG_OPTIONS,
  run: gcBigMeasure,
});

runIfMain(import.meta.url, gcHistory, gcBig);
