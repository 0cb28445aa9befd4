// Cell: several Branches of one Layer developed side by side. Setup (untimed): import the tree,
// fork --branches Branches from the genesis Layer, one Workspace each. Then --commits rounds,
// round-robin over the Branches in this one process: apply a small deterministic edit (1–3 files,
// 100–300 bytes each, seeded per Branch and round) and commitWorkspace. Before the loop the client
// is closed (checkpointing the WAL) and reconnected, and warmed by one no-op commit per clean
// Workspace (UpToDate; noopCommitMs). `ms` is the sum of the commitWorkspace calls; loopMs also counts the edits. Growth: receipts (bytesInserted =
// semantic, allocatedGrowth = pages) summed, and Store + WAL bytes before/after, both taken after
// a close (which checkpoints the WAL). Afterwards every Branch's log and last edits are checked.
//   node --import tsx bench/cells/parallel_branches.ts --cell layerfs-parallel-branches --dir FIXTURE --tmp SCRATCH --tier 1000 \
//     --files 1000 [--branches 4 --commits 25 --seed 1]

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { round1 } from '../lib/cell.js';
import { Rng } from '../../test/helpers/random.js';
import { applyEdits, type Edit, editSet, treeParams } from '../fixtures/tree.js';
import { median, percentile, storeFiles } from '../lib/measure.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';
import { Client, type WorkspaceInfo } from '../../lib/sdk/index.js';

const PARALLEL_OPTIONS = { files: { type: 'string' }, branches: { type: 'string', default: '4' }, commits: { type: 'string', default: '25' }, seed: { type: 'string', default: '1' } } as const;

/** The edit of Branch b in round r: 1–3 files, 100–300 bytes each, one of overwrite/insert/append. */
function planEdit(files: number, seed: number, b: number, r: number): Edit[] {
  const stream = 0x9a7a11e1 + b * 100_003 + r;
  const rng = new Rng(seed, stream);
  const k = 1 + rng.below(3);
  const editBytes = 100 + rng.below(201);
  return editSet(treeParams(files), { k, seed: seed * 1_000_003 + stream, mode: 'mixed', editBytes });
}

/** `rounds` rounds, each committing a seeded small edit in every Branch's Workspace in turn
 * (round-robin in one process); every commit timed alone. */
async function commitRounds(c: Client, names: string[], wss: WorkspaceInfo[], o: { files: number; seed: number; rounds: number }) {
  const { files, seed, rounds } = o;
  const nBranches = wss.length;
  const commitMs: number[] = [];
  const roundMs: number[][] = Array.from({ length: rounds }, () => []);
  let changedBytes = 0;
  let editBytes = 0;
  let editedFiles = 0;
  let semantic = 0;
  let allocated = 0;
  let objectsInserted = 0;
  let changedPaths = 0;
  const lastEdits: Edit[][] = Array.from({ length: nBranches }, () => []);
  const loop0 = performance.now();
  for (let r = 0; r < rounds; r++) {
    for (let b = 0; b < nBranches; b++) {
      const edits = planEdit(files, seed, b, r);
      applyEdits(wss[b]!.path, edits);
      lastEdits[b] = edits;
      // Changed bytes: the whole current content of each edited file (what a whole-file store
      // writes); editBytes: only the bytes the edit wrote.
      for (const e of edits) changedBytes += fs.statSync(path.join(wss[b]!.path, e.relPath)).size;
      editBytes += edits.reduce((s, e) => s + e.data.length, 0);
      editedFiles += edits.length;
      const t = performance.now();
      const rc = await c.commitWorkspace(wss[b]!.id);
      const ms = performance.now() - t;
      if (rc.outcome !== 'Created') throw new Error(`round ${r}, Branch ${names[b]}: commitWorkspace outcome ${rc.outcome}, expected Created (${JSON.stringify(rc).slice(0, 300)})`);
      commitMs.push(ms);
      roundMs[r]!.push(ms);
      semantic += rc.bytesInserted ?? rc.semanticGrowth ?? 0;
      allocated += rc.allocatedGrowth ?? 0;
      objectsInserted += rc.objectsInserted ?? 0;
      changedPaths += rc.changedPaths ?? 0;
    }
  }
  const loopMs = performance.now() - loop0;
  return { commitMs, roundMs, changedBytes, editBytes, editedFiles, semantic, allocated, objectsInserted, changedPaths, lastEdits, loopMs };
}

/** Every Branch has `rounds` Commits and its head holds the last edited files. */
function checkHeads(c: Client, names: string[], wss: WorkspaceInfo[], lastEdits: Edit[][], rounds: number): void {
  const nBranches = wss.length;
  for (let b = 0; b < nBranches; b++) {
    const log = c.log(names[b]!);
    if (log.length !== rounds) throw new Error(`Branch ${names[b]} has ${log.length} Commits, expected ${rounds}`);
    for (const e of lastEdits[b]!) {
      const want = fs.readFileSync(path.join(wss[b]!.path, e.relPath));
      if (!want.equals(c.cat(names[b]!, e.relPath))) throw new Error(`Branch ${names[b]}: ${e.relPath} differs from its Workspace after the last commit`);
    }
  }
}

/** Untimed checks of the rest of the Branch API, after every figure is taken: each records what
 * happened instead of throwing, so a surprise shows up in the table without losing the row. */
async function branchApiChecks(storePath: string, names: string[], wss: WorkspaceInfo[]): Promise<Record<string, string>> {
  const apiChecks: Record<string, string> = {};
  const check = async (name: string, fn: () => Promise<string> | string) => {
    try {
      apiChecks[name] = await fn();
    } catch (err) {
      apiChecks[name] = `FAILED: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`;
    }
  };
  const c = Client.connect(storePath);
  await check('forkFromCommit', () => {
    const log = c.log(names[0]!);
    const mid = log[Math.floor(log.length / 2)]!;
    const br = c.forkBranch({ name: 'from-commit', branch: names[0]!, commit: mid.id });
    return br.headCommitId === mid.id ? 'ok' : `FAILED: head ${String(br.headCommitId)}, expected ${mid.id}`;
  });
  await check('addFirst', () => {
    const r = c.add(names[0]!);
    return r.outcome === 'Added' ? 'ok' : `FAILED: outcome ${r.outcome}, expected Added`;
  });
  await check('addSecond', () => {
    // Branch 1 is based on the genesis Layer, which is no longer the head: a refusal is expected.
    const r = c.add(names[1]!);
    return r.outcome === 'HeadMoved' ? 'ok (HeadMoved)' : `FAILED: outcome ${r.outcome}, expected HeadMoved`;
  });
  for (let b = 0; b < wss.length; b++) {
    await check(`endWorkspace${b}`, async () => {
      const r = (await c.endWorkspace(wss[b]!.id, { discard: true })) as { outcome?: string };
      if (r.outcome !== 'Ended') return `FAILED: outcome ${String(r.outcome)}, expected Ended`;
      return fs.existsSync(wss[b]!.path) ? `FAILED: ${wss[b]!.path} still exists` : 'ok';
    });
  }
  await c.close();
  return apiChecks;
}

async function parallelBranchesMeasure(a: Given<typeof PARALLEL_OPTIONS, 'dir' | 'tmp' | 'files'>): Promise<CellResult> {
  const tmp = path.resolve(a.tmp);
  const files = Number(a.files);
  const nBranches = Math.max(1, Number(a.branches));
  const rounds = Math.max(1, Number(a.commits));
  const seed = Number(a.seed);
  const storePath = path.join(tmp, 'bench.layerfs');

  // initMs covers Client.create + initLayerStack, as in init_namespace.
  let t = performance.now();
  let c = Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
  const initMs = performance.now() - t;
  t = performance.now();
  const names: string[] = [];
  const wss: WorkspaceInfo[] = [];
  for (let b = 0; b < nBranches; b++) {
    const br = c.forkBranch({ name: `agent-${b}`, layer: init.layer.id });
    names.push(br.name);
    wss.push(await c.createWorkspace(br.name, { at: path.join(tmp, `ws${b}`) }));
  }
  const setupMs = performance.now() - t;
  await c.close();
  const filesBefore = storeFiles(storePath);
  c = Client.connect(storePath);
  const objectsBefore = c.info().objects;
  // Warm the new connection with a no-op commit per clean Workspace (UpToDate, writes nothing), so
  // round 1 is not a cold start and "round 1 → last" shows how commits age with history.
  const noopMs: number[] = [];
  for (const w of wss) {
    t = performance.now();
    const rc = await c.commitWorkspace(w.id);
    noopMs.push(performance.now() - t);
    if (rc.outcome !== 'UpToDate') throw new Error(`no-op commit of clean Workspace ${w.path}: outcome ${rc.outcome}, expected UpToDate`);
  }
  const filesNoop = storeFiles(storePath);

  const { commitMs, roundMs, changedBytes, editBytes, editedFiles, semantic, allocated, objectsInserted, changedPaths, lastEdits, loopMs } = await commitRounds(c, names, wss, { files, seed, rounds });
  const filesLive = storeFiles(storePath);
  const objectsAfter = c.info().objects;

  checkHeads(c, names, wss, lastEdits, rounds);
  await c.close();
  const filesAfter = storeFiles(storePath);

  const apiChecks = await branchApiChecks(storePath, names, wss);

  const commits = commitMs.length;
  const totalCommitMs = commitMs.reduce((s, x) => s + x, 0);
  const fileGrowth = filesAfter.bytes - filesBefore.bytes;
  return {
    ms: round1(totalCommitMs),
    loopMs: round1(loopMs),
    commits,
    branches: nBranches,
    commitsPerS: round1(commits / (totalCommitMs / 1000)),
    medianCommitMs: round1(median(commitMs)),
    p90CommitMs: round1(percentile(commitMs, 90)),
    maxCommitMs: round1(Math.max(...commitMs)),
    firstRoundMedianMs: round1(median(roundMs[0]!)),
    lastRoundMedianMs: round1(median(roundMs[rounds - 1]!)),
    noopCommitMs: round1(median(noopMs)),
    noopFileGrowth: filesNoop.bytes - filesBefore.bytes,
    initMs: round1(initMs),
    setupMs: round1(setupMs),
    files,
    editedFiles,
    changedPaths,
    changedBytes,
    editBytes,
    bytesInserted: semantic,
    objectsInserted,
    allocatedGrowth: allocated,
    fileGrowthLive: filesLive.bytes - filesBefore.bytes,
    fileGrowth,
    semanticPerChanged: Math.round((semantic / changedBytes) * 1000) / 1000,
    allocatedPerChanged: Math.round((allocated / changedBytes) * 1000) / 1000,
    filePerChanged: Math.round((fileGrowth / changedBytes) * 1000) / 1000,
    objects: objectsAfter,
    objectsAdded: objectsAfter - objectsBefore,
    storeBytes: filesAfter.bytes,
    apiChecks,
  };
}

export const parallelBranches = defineCell({
  file: import.meta.url,
  id: 'layerfs-parallel-branches',
  tool: 'layerfs',
  required: ['dir', 'tmp', 'files'],
  args: PARALLEL_OPTIONS,
  run: parallelBranchesMeasure,
});

runIfMain(import.meta.url, parallelBranches);
