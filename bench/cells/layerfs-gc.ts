// Cell: `db gc` (issue 23). Mode `history`: the store_gc history (cells/_gc-history.ts) of
// --branches Branches × --commits Commits, each Branch committed through a materialized
// Workspace; then all but --keep Branches deleted, `gc` timed (ms, vacuum apart as vacuumMs), the
// Store file after it against a fresh Store that holds only the kept Branches' histories
// (freshBytes), verify, and every kept Commit's root id equal in both Stores (the same trees).
// Mode `nogarbage`: import the tree fixture --dir, then time `verify` and `gc` (nothing to reclaim).
//   node --import tsx bench/cells/layerfs-gc.ts --tmp SCRATCH --tier T --mode history --branches 50 --commits 20 --keep 5
//   node --import tsx bench/cells/layerfs-gc.ts --tmp SCRATCH --tier T --mode nogarbage --dir FIXTURE

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cellArgs, requireArgs } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { storeFiles } from './_branches-sdk.js';
import { applyCommit, writeBase } from './_gc-history.js';

const CELL = 'layerfs-gc';
const a = cellArgs({ mode: { type: 'string', default: 'history' }, branches: { type: 'string', default: '50' }, commits: { type: 'string', default: '20' }, keep: { type: 'string', default: '5' } });
const tier = a.tier!;

interface GcShape {
  ms: number;
  vacuumMs: number;
  markMs: number;
  sweepMs: number;
  rewriteMs: number;
  deletedObjects: number;
  objects: number;
  rowsDeleted: number;
  rowsRewritten: number;
  storedBytesFreed: number;
  garbageBytesKept: number;
  transactions: number;
}
interface GcClient {
  initLayerStack(o: { name: string; source: string }): Promise<{ layer: { id: string } }>;
  forkBranch(o: { name: string; layer: string }): { name: string };
  createWorkspace(b: string, o: { at: string }): Promise<{ id: string; path: string }>;
  commitWorkspace(ref: string): Promise<{ outcome: string }>;
  endWorkspace(ref: string): Promise<{ outcome: string }>;
  deleteBranch(ref: string): Promise<{ outcome: string }>;
  log(b: string): { rootId: string }[];
  gc(o?: { vacuum?: boolean }): Promise<GcShape>;
  verify(): { ok: boolean; objectsChecked: number };
  info(): { objects: number };
  close(): void;
}
interface GcSdk {
  Client: { create(p: string): GcClient; connect(p: string): GcClient };
}

/** Builds a Store with the base and Branches `branches` (indices) of the history. */
async function build(sdk: GcSdk, store: string, base: string, scratch: string, branches: number[], commits: number): Promise<GcClient> {
  const c = sdk.Client.create(store);
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

try {
  requireArgs(a, ['tmp']);
  const tmp = path.resolve(a.tmp!);
  const sdk = (await import(new URL('../../lib/sdk/index.js', import.meta.url).href)) as GcSdk;
  if (a.mode === 'nogarbage') {
    requireArgs(a, ['dir']);
    const store = path.join(tmp, 'nogarbage.layerfs');
    const c = sdk.Client.create(store);
    await c.initLayerStack({ name: 'tree', source: path.resolve(a.dir!) });
    c.close();
    const c2 = sdk.Client.connect(store);
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
    emit({ cell: CELL, tier, ms: Math.round(ms), verifyMs: Math.round(verifyMs), gcOverVerify: Math.round((ms / verifyMs) * 1000) / 1000, markMs: Math.round(g.markMs), objects, storeBytes: storeFiles(store).bytes });
  } else {
    const branches = Number(a.branches);
    const commits = Number(a.commits);
    const keep = Number(a.keep);
    const base = path.join(tmp, 'base');
    writeBase(base);
    let t = performance.now();
    const c = await build(sdk, path.join(tmp, 'gc.layerfs'), base, tmp, [...Array(branches).keys()], commits);
    const buildMs = performance.now() - t;
    t = performance.now();
    for (let b = keep; b < branches; b++) await c.deleteBranch(`b${b}`);
    const deleteMs = performance.now() - t;
    c.close();
    const before = storeFiles(path.join(tmp, 'gc.layerfs')).bytes;
    const c2 = sdk.Client.connect(path.join(tmp, 'gc.layerfs'));
    const g = await c2.gc({ vacuum: true });
    const v = c2.verify();
    if (!v.ok) throw new Error('verify failed after gc');
    const roots = [...Array(keep).keys()].map((b) => c2.log(`b${b}`).map((x) => x.rootId));
    const objects = c2.info().objects;
    c2.close();
    const after = storeFiles(path.join(tmp, 'gc.layerfs')).bytes;
    const f = await build(sdk, path.join(tmp, 'fresh.layerfs'), base, tmp, [...Array(keep).keys()], commits);
    const same = [...Array(keep).keys()].every((b) => JSON.stringify(f.log(`b${b}`).map((x) => x.rootId)) === JSON.stringify(roots[b]));
    f.close();
    if (!same) throw new Error('a kept Branch differs from the fresh Store’s replay of it');
    const fresh = storeFiles(path.join(tmp, 'fresh.layerfs')).bytes;
    fs.rmSync(path.join(tmp, 'fresh.layerfs'), { force: true });
    emit({
      cell: CELL,
      tier,
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
    });
  }
} catch (err) {
  fail(CELL, tier, err);
}
