// Cell: what a reconciling commit costs against a plain one, on the --dir tree fixture. Setup
// (untimed): import, fork one Branch, two materialized Workspaces A and B of it. Then --rounds
// rounds: B makes 10 Commits of 10 new files each (the head moves 10 Commits ahead of A's base);
// A writes 10 files and commits (reconciling: timed); A writes 10 more and commits again (the
// head did not move: a plain commit of the same change, timed). Reports the medians and their
// ratio, and checks every file of both sides is in the head.
//   node --import tsx bench/cells/layerfs-reconcile-cost.ts --dir FIXTURE --tmp SCRATCH --tier 100000 --rounds 3
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { cellArgs, requireArgs } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { Client } from '../../lib/sdk/index.js';

const CELL = 'layerfs-reconcile-cost';
const a = cellArgs({ rounds: { type: 'string', default: '3' } });
const tier = a.tier!;
const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)]!;

try {
  requireArgs(a, ['dir', 'tmp']);
  const tmp = path.resolve(a.tmp);
  const store = path.join(tmp, 'bench.layerfs');
  const c = Client.create(store);
  const layer = (await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) })).layer.id;
  c.forkBranch({ name: 'b', layer });
  const wa = await c.createWorkspace('b', { at: path.join(tmp, 'a'), projection: 'materialize' });
  const wb = await c.createWorkspace('b', { at: path.join(tmp, 'b'), projection: 'materialize' });
  const reconciling: number[] = [];
  const reconcileMs: number[] = [];
  const plain: number[] = [];
  let ok = true;
  for (let round = 0; round < Number(a.rounds); round++) {
    for (let k = 0; k < 10; k++) {
      for (let f = 0; f < 10; f++) writeFileSync(path.join(wb.path, `head-${round}-${k}-${f}.txt`), `head ${round} ${k} ${f}\n`);
      const r = await c.commitWorkspace(wb.id);
      ok &&= r.outcome === 'Created';
    }
    for (let f = 0; f < 10; f++) writeFileSync(path.join(wa.path, `ws-${round}-r-${f}.txt`), `ws ${round} ${f}\n`);
    const r1 = await c.commitWorkspace(wa.id);
    ok &&= r1.outcome === 'Created' && r1.reconciled !== undefined;
    reconciling.push(r1.ms);
    if (r1.outcome === 'Created' && r1.reconciled) reconcileMs.push(r1.reconciled.ms);
    for (let f = 0; f < 10; f++) writeFileSync(path.join(wa.path, `ws-${round}-p-${f}.txt`), `ws ${round} ${f}\n`);
    const r2 = await c.commitWorkspace(wa.id);
    ok &&= r2.outcome === 'Created' && r2.reconciled === undefined;
    plain.push(r2.ms);
  }
  const last = Number(a.rounds) - 1;
  const checks = {
    outcomes: ok ? 'ok' : 'FAILED: a commit was not Created (or not reconciled as expected)',
    content: c.cat('b', `head-${last}-9-9.txt`).toString() === `head ${last} 9 9\n` && c.cat('b', `ws-${last}-p-9.txt`).toString() === `ws ${last} 9\n` ? 'ok' : 'FAILED: a file is missing from the head',
    verify: c.verify().ok ? 'ok' : 'FAILED',
  };
  c.close();
  const rm = median(reconciling);
  const pm = median(plain);
  emit({ cell: CELL, tier, ms: Math.round(rm * 10) / 10, reconcilingMs: Math.round(rm * 10) / 10, plainMs: Math.round(pm * 10) / 10, reconcileMs: Math.round(median(reconcileMs) * 10) / 10, ratio: Math.round((rm / pm) * 100) / 100, rounds: Number(a.rounds), checks });
} catch (err) {
  fail(CELL, tier, err);
}
