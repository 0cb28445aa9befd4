// Cell: a small development story on an N-file tree.
//   init      Client.create + initLayerStack(FIXTURE)                                 → initMs
//   trunk     forkBranch 'trunk' from the genesis Layer, createWorkspace (materialize), close +
//             reconnect, one no-op commit (warm-up); then --trunk commits, each editing 10 files
//             (64-byte mixed edits, devEdit in _campaign.ts, seed 1000 + i)
//   fork      at trunk's commit --fork-at: forkBranch 'a' and 'b' ({ branch, commit }) → forkMs;
//             a Workspace each                                                        → materializeMs
//   branches  --branch-commits rounds, a then b (seeds 2000 + i, 3000 + i)
//   add       add('a') → addMs (the winner becomes the LayerStack's next Layer; expected Added);
//             then add('b') (based on the old head: HeadMoved expected, recorded in checks)
// `ms` is the sum of all commitWorkspace calls. Growth: receipts summed (semantic, pages).
// Checks (untimed): every Branch's log length, the new Layer holds a's last edits.
//   node --import tsx bench/cells/layerfs-branch-dev.ts --dir FIXTURE --tmp SCRATCH --tier 1,000 --files 1000

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cellArgs, requireArgs, BRANCH_DEV_OPTIONS } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import type { Edit } from '../fixtures/tree.js';
import { devEdit, loadCampaignSdk, median, r1, r3, semanticOf, storeFiles, type CommitReceiptShape } from './_campaign.js';

const CELL = 'layerfs-branch-dev';
const a = cellArgs(BRANCH_DEV_OPTIONS);
const tier = a.tier!;
const MTIME0 = 1_700_001_000;

try {
  requireArgs(a, ['dir', 'tmp', 'files']);
  const tmp = path.resolve(a.tmp);
  const files = Number(a.files);
  const trunkN = Number(a.trunk);
  const forkAt = Number(a['fork-at']);
  const branchN = Number(a['branch-commits']);
  const storePath = path.join(tmp, 'bench.layerfs');
  const sdk = await loadCampaignSdk();

  let t = performance.now();
  let c = sdk.Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
  const initMs = performance.now() - t;
  c.forkBranch({ name: 'trunk', layer: init.layer.id });
  t = performance.now();
  const wsTrunk = await c.createWorkspace('trunk', { at: path.join(tmp, 'trunk') });
  const materializeMs = [performance.now() - t];
  await c.close();
  const filesBefore = storeFiles(storePath);
  c = sdk.Client.connect(storePath);
  const noop = await c.commitWorkspace(wsTrunk.id);
  if (noop.outcome !== 'UpToDate') throw new Error(`no-op commit: outcome ${noop.outcome}`);

  const commitMs: { trunk: number[]; a: number[]; b: number[] } = { trunk: [], a: [], b: [] };
  let semantic = 0;
  let allocated = 0;
  let changedBytes = 0;
  let stamp = MTIME0;
  const commit = async (which: 'trunk' | 'a' | 'b', ws: { id: string; path: string }, seed: number): Promise<Edit[]> => {
    const e = devEdit(ws.path, files, seed, ++stamp);
    changedBytes += e.changedBytes;
    const t1 = performance.now();
    const r: CommitReceiptShape = await c.commitWorkspace(ws.id);
    commitMs[which].push(performance.now() - t1);
    if (r.outcome !== 'Created') throw new Error(`${which} commit: outcome ${r.outcome}, expected Created (${JSON.stringify(r).slice(0, 300)})`);
    semantic += semanticOf(r) ?? 0;
    allocated += r.allocatedGrowth ?? 0;
    return e.edits;
  };

  for (let i = 0; i < trunkN; i++) await commit('trunk', wsTrunk, 1000 + i);
  const trunkLog = c.log('trunk');
  if (trunkLog.length !== trunkN) throw new Error(`trunk has ${trunkLog.length} Commits, expected ${trunkN}`);
  const at = trunkLog[trunkN - forkAt]!; // newest first: commit #forkAt (1-based, oldest first)
  const forkMs: number[] = [];
  const wss: Record<'a' | 'b', { id: string; path: string }> = {} as never;
  for (const name of ['a', 'b'] as const) {
    t = performance.now();
    const br = c.forkBranch({ name, branch: 'trunk', commit: at.id });
    forkMs.push(performance.now() - t);
    if (br.headCommitId !== at.id) throw new Error(`fork ${name}: head ${String(br.headCommitId)}, expected ${at.id}`);
    t = performance.now();
    wss[name] = await c.createWorkspace(name, { at: path.join(tmp, name) });
    materializeMs.push(performance.now() - t);
  }
  let lastA: Edit[] = [];
  for (let i = 0; i < branchN; i++) {
    lastA = await commit('a', wss.a, 2000 + i);
    await commit('b', wss.b, 3000 + i);
  }

  t = performance.now();
  const added = c.add('a');
  const addMs = performance.now() - t;
  if (added.outcome !== 'Added') throw new Error(`add('a'): outcome ${added.outcome}, expected Added`);

  // Checks, untimed.
  const checks: Record<string, string> = {};
  for (const name of ['a', 'b'] as const) {
    const n = c.log(name).length;
    checks[`log ${name}`] = n === forkAt + branchN ? 'ok' : `FAILED: ${n} Commits, expected ${forkAt + branchN}`;
  }
  const layerRef = added.layer?.id ?? 'bench';
  let layerOk = 'ok';
  for (const e of lastA) {
    const want = fs.readFileSync(path.join(wss.a.path, e.relPath));
    if (!want.equals(c.cat(layerRef, e.relPath))) layerOk = `FAILED: ${e.relPath} in the added Layer differs from a's Workspace`;
  }
  checks.addedLayer = layerOk;
  try {
    const second = c.add('b');
    checks.addLoser = second.outcome === 'HeadMoved' ? 'ok (HeadMoved)' : `unexpected: ${second.outcome}`;
  } catch (err) {
    checks.addLoser = `FAILED: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`;
  }
  const d = c.analyzeDedup();
  const info = c.info();
  await c.close();
  const filesAfter = storeFiles(storePath);

  const all = [...commitMs.trunk, ...commitMs.a, ...commitMs.b];
  emit({
    cell: CELL,
    tier,
    ms: r1(all.reduce((s, v) => s + v, 0)),
    commits: all.length,
    medianCommitMs: r1(median(all)),
    trunkMedianMs: r1(median(commitMs.trunk)),
    branchMedianMs: r1(median([...commitMs.a, ...commitMs.b])),
    forkMs: r3(median(forkMs)),
    materializeMs: r1(median(materializeMs)),
    materializeAllMs: materializeMs.map(r1),
    addMs: r3(addMs),
    addOutcome: added.outcome,
    initMs: r1(initMs),
    files,
    changedBytes,
    semanticGrowth: semantic,
    allocatedGrowth: allocated,
    fileGrowth: filesAfter.bytes - filesBefore.bytes,
    states: d.states.length,
    logicalBytes: d.logicalBytes,
    uniqueBytes: d.uniqueBytes,
    dedupRatio: Math.round(d.dedupRatio * 100) / 100,
    objects: info.objects,
    storeBytes: filesAfter.bytes,
    checks,
  });
} catch (err) {
  fail(CELL, tier, err);
}
