// Cell: a small development story on an N-file tree.
//   init      Client.create + initLayerStack(FIXTURE)                                 → initMs
//   trunk     forkBranch 'trunk' from the genesis Layer, createWorkspace (materialize), close +
//             reconnect, one no-op commit (warm-up); then --trunk commits, each editing 10 files
//             (64-byte mixed edits, devEdit in lib/file-ops.ts, seed 1000 + i)
//   fork      at trunk's commit --fork-at: forkBranch 'a' and 'b' ({ branch, commit }) → forkMs;
//             a Workspace each                                                        → materializeMs
//   branches  --branch-commits rounds, a then b (seeds 2000 + i, 3000 + i)
//   add       add('a') → addMs (the winner becomes the LayerStack's next Layer; expected Added);
//             then add('b', { strict }) (HeadMoved expected) and add('b'), which reconciles b
//             onto a's Layer: Added, or Conflicted on paths both edited (recorded in checks)
// `ms` is the sum of all commitWorkspace calls. Growth: receipts summed (semantic, pages).
// Checks (untimed): every Branch's log length, the new Layer holds a's last edits, the loser's
// Add (above); a failed check fails the cell.
//   node --import tsx bench/cells/branch_development.ts --cell layerfs-branch-dev --dir FIXTURE --tmp SCRATCH --tier 1,000 --files 1000

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { BRANCH_DEV_OPTIONS } from '../lib/args.js';
import type { Edit } from '../fixtures/tree.js';
import { devEdit } from '../lib/file-ops.js';
import { median, r1, r3, semanticOf, storeFiles } from '../lib/measure.js';
import { copyTree } from '../fixtures/copy.js';
import { duBytes } from '../lib/cell.js';
import { git, gitEnvPlain, gitInitCommit, gitQuick } from '../lib/git.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';
import { Client, type CommitResult } from '../../lib/sdk/index.js';
import { openWorkspace } from '../lib/workspace-setup.js';

const MTIME0 = 1_700_001_000;

/** The paths each part of the story edited: trunk up to the fork (both Branches have those), a, b. */
interface Touched {
  shared: Set<string>;
  a: Set<string>;
  b: Set<string>;
}

/** What the checks need to know of the story: a's and b's last edits, the paths edited. */
interface Story {
  forkAt: number;
  branchN: number;
  lastA: Edit[];
  lastB: Edit[];
  touched: Touched;
  wsA: string;
  wsB: string;
  layerRef: string;
}

const failed = (err: unknown) => `FAILED: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`;

/** The files of `edits` whose bytes in state `ref` differ from the Workspace directory `ws`. */
function differing(c: Client, ref: string, ws: string, edits: Edit[]): string[] {
  return edits.filter((e) => !fs.readFileSync(path.join(ws, e.relPath)).equals(c.cat(ref, e.relPath))).map((e) => e.relPath);
}

/**
 * The loser's Add, after the winner's moved the LayerStack on from b's base Layer. Strict, it
 * refuses with HeadMoved and moves nothing. Reconciling (the default), it either lands: a Layer
 * on top of a's holding b's last edits wherever neither a nor the shared trunk changed the file;
 * or answers Conflicted, the head staying a's Layer, with a resolution Workspace (ended here).
 * The merge base is b's base Layer (the genesis Layer), so both sides' changes include trunk's
 * before the fork: a conflict must be on a path both sides changed since that Layer; how many of
 * them neither a nor b alone explains (a ∩ b) is in the check's text.
 */
async function loserAddChecks(c: Client, o: Story): Promise<Record<string, string>> {
  const checks: Record<string, string> = {};
  const head = () => c.layerStacks().find((s) => s.name === 'bench')?.headLayerId;
  const changedA = new Set([...o.touched.shared, ...o.touched.a]);
  const changedB = new Set([...o.touched.shared, ...o.touched.b]);
  try {
    const strict = c.add('b', { strict: true });
    checks.addLoserStrict = strict.outcome === 'HeadMoved' && head() === o.layerRef ? 'ok (HeadMoved)' : `FAILED: ${strict.outcome}, head ${String(head())}`;
  } catch (err) {
    checks.addLoserStrict = failed(err);
  }
  try {
    const r = c.add('b');
    if (r.outcome === 'Added') {
      const bad = differing(c, r.layer.id, o.wsB, o.lastB.filter((e) => !changedA.has(e.relPath)));
      checks.addLoser = r.previousHead === o.layerRef && bad.length === 0 ? 'ok (Added, reconciled)' : `FAILED: Added on ${r.previousHead}; b's edits missing in ${bad.join(', ')}`;
    } else if (r.outcome === 'Conflicted') {
      const paths = r.conflicts.map((k) => k.path.replace(/^\//, ''));
      const stray = paths.filter((p) => !changedA.has(p) || !changedB.has(p));
      const viaTrunk = paths.filter((p) => !(o.touched.a.has(p) && o.touched.b.has(p))).length;
      // The resolution Workspace holds the conflicted files as written for settling: discard it.
      const end = await c.endWorkspace(r.resolutionWorkspace.id, { discard: true });
      const ok = paths.length > 0 && stray.length === 0 && head() === o.layerRef && end.outcome === 'Ended';
      checks.addLoser = ok
        ? `ok (Conflicted on ${paths.length} paths, ${viaTrunk} of them edited by trunk before the fork and one Branch)`
        : `FAILED: Conflicted, head ${String(head())}, conflicts on paths one side never changed: ${stray.join(', ')}, end ${end.outcome}`;
    } else {
      checks.addLoser = `FAILED: ${r.outcome}, expected Added or Conflicted`;
    }
  } catch (err) {
    checks.addLoser = failed(err);
  }
  return checks;
}

/** Untimed checks: every Branch's log length, the added Layer holds a's last edits, the loser's Add. */
async function branchChecks(c: Client, o: Story): Promise<Record<string, string>> {
  const checks: Record<string, string> = {};
  for (const name of ['a', 'b'] as const) {
    const n = c.log(name).length;
    checks[`log ${name}`] = n === o.forkAt + o.branchN ? 'ok' : `FAILED: ${n} Commits, expected ${o.forkAt + o.branchN}`;
  }
  const bad = differing(c, o.layerRef, o.wsA, o.lastA);
  checks.addedLayer = bad.length === 0 ? 'ok' : `FAILED: ${bad.join(', ')} in the added Layer differ from a's Workspace`;
  return { ...checks, ...(await loserAddChecks(c, o)) };
}

/** A cell whose checks failed is an error row (the run exits 1), with every failed check named. */
function failOnChecks(checks: Record<string, string>): void {
  const bad = Object.entries(checks).filter(([, v]) => !v.startsWith('ok'));
  if (bad.length > 0) throw new Error(`checks failed: ${bad.map(([k, v]) => `${k}: ${v}`).join('; ')}`);
}

/** Forks Branches a and b at trunk's Commit `at` and materializes a Workspace of each (timed). */
async function forkAB(c: Client, at: string, tmp: string, materializeMs: number[]) {
  const forkMs: number[] = [];
  const wss: Record<'a' | 'b', { id: string; path: string }> = {} as never;
  for (const name of ['a', 'b'] as const) {
    let t = performance.now();
    const br = c.forkBranch({ name, branch: 'trunk', commit: at });
    forkMs.push(performance.now() - t);
    if (br.headCommitId !== at) throw new Error(`fork ${name}: head ${String(br.headCommitId)}, expected ${at}`);
    t = performance.now();
    wss[name] = await c.createWorkspace(name, { at: path.join(tmp, name) });
    materializeMs.push(performance.now() - t);
  }
  return { forkMs, wss };
}

/** The story's numbers, the same for layerfs and git. */
function storyOf(a: Given<typeof BRANCH_DEV_OPTIONS, 'dir' | 'tmp' | 'files'>) {
  return { tmp: path.resolve(a.tmp), files: Number(a.files), trunkN: Number(a.trunk), forkAt: Number(a['fork-at']), branchN: Number(a['branch-commits']) };
}

async function layerfsBranchDev(a: Given<typeof BRANCH_DEV_OPTIONS, 'dir' | 'tmp' | 'files'>): Promise<CellResult> {
  const { tmp, files, trunkN, forkAt, branchN } = storyOf(a);
  const storePath = path.join(tmp, 'bench.layerfs');

  // The Store, Branch trunk and its Workspace, reopened and warmed by a no-op commit (bench/lib/workspace-setup.ts).
  const { c, initMs, materializeMs: trunkMaterializeMs, ws: wsTrunk, filesBefore } = await openWorkspace(storePath, a.dir, path.join(tmp, 'trunk'), 'trunk');
  const materializeMs = [trunkMaterializeMs];

  const commitMs: { trunk: number[]; a: number[]; b: number[] } = { trunk: [], a: [], b: [] };
  let semantic = 0;
  let allocated = 0;
  let changedBytes = 0;
  let stamp = MTIME0;
  const commit = async (which: 'trunk' | 'a' | 'b', ws: { id: string; path: string }, seed: number): Promise<Edit[]> => {
    const e = devEdit(ws.path, files, seed, ++stamp);
    changedBytes += e.changedBytes;
    const t1 = performance.now();
    const r: CommitResult = await c.commitWorkspace(ws.id);
    commitMs[which].push(performance.now() - t1);
    if (r.outcome !== 'Created') throw new Error(`${which} commit: outcome ${r.outcome}, expected Created (${JSON.stringify(r).slice(0, 300)})`);
    semantic += semanticOf(r) ?? 0;
    allocated += r.allocatedGrowth ?? 0;
    return e.edits;
  };

  const touched: Touched = { shared: new Set(), a: new Set(), b: new Set() };
  const note = (set: Set<string>, edits: Edit[]) => (edits.forEach((e) => set.add(e.relPath)), edits);
  for (let i = 0; i < trunkN; i++) note(i < forkAt ? touched.shared : new Set(), await commit('trunk', wsTrunk, 1000 + i));
  const trunkLog = c.log('trunk');
  if (trunkLog.length !== trunkN) throw new Error(`trunk has ${trunkLog.length} Commits, expected ${trunkN}`);
  const at = trunkLog[trunkN - forkAt]!; // newest first: commit #forkAt (1-based, oldest first)
  const { forkMs, wss } = await forkAB(c, at.id, tmp, materializeMs);
  let lastA: Edit[] = [];
  let lastB: Edit[] = [];
  for (let i = 0; i < branchN; i++) {
    lastA = note(touched.a, await commit('a', wss.a, 2000 + i));
    lastB = note(touched.b, await commit('b', wss.b, 3000 + i));
  }

  const t = performance.now();
  const added = c.add('a');
  const addMs = performance.now() - t;
  if (added.outcome !== 'Added') throw new Error(`add('a'): outcome ${added.outcome}, expected Added`);

  const checks = await branchChecks(c, { forkAt, branchN, lastA, lastB, touched, wsA: wss.a.path, wsB: wss.b.path, layerRef: added.layer.id });
  failOnChecks(checks);
  const d = c.analyzeDedup();
  const info = c.info();
  await c.close();
  const filesAfter = storeFiles(storePath);

  const all = [...commitMs.trunk, ...commitMs.a, ...commitMs.b];
  return {
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
  };
}

// Cell: the git peer of layerfs-branch-dev. Untimed setup: copy the fixture into SCRATCH/trunk,
// `git init && git add -A && git commit` there (initMs). Then the same story with the same edits
// and mtimes: --trunk commits (`git commit -a -q -m x`, each timed as one process), `git branch`
// a and b at trunk's commit --fork-at (forkMs), `git worktree add` for each (materializeMs: the
// checkout of the whole tree), --branch-commits rounds a then b, and "add": `git update-ref
// refs/heads/published a` (git's nearest equivalent of publishing a Branch head: a ref update).
//   node --import tsx bench/cells/branch_development.ts --cell git-branch-dev --dir FIXTURE --tmp SCRATCH --tier 1,000 --files 1000

async function gitBranchDev(a: Given<typeof BRANCH_DEV_OPTIONS, 'dir' | 'tmp' | 'files'>): Promise<CellResult> {
  const { tmp, files, trunkN, forkAt, branchN } = storyOf(a);
  const trunk = path.join(tmp, 'trunk');
  const env = gitEnvPlain();
  copyTree(path.resolve(a.dir), trunk);
  const initMs = gitInitCommit(env, trunk);
  const gitDir = path.join(trunk, '.git');
  const before = duBytes(gitDir);

  const commitMs: { trunk: number[]; a: number[]; b: number[] } = { trunk: [], a: [], b: [] };
  let changedBytes = 0;
  let stamp = MTIME0;
  const commit = (which: 'trunk' | 'a' | 'b', dir: string, seed: number): void => {
    changedBytes += devEdit(dir, files, seed, ++stamp).changedBytes;
    commitMs[which].push(gitQuick(['commit', '-a', '-q', '-m', `${which} ${seed}`], env, dir));
  };
  for (let i = 0; i < trunkN; i++) commit('trunk', trunk, 1000 + i);
  const at = git(['rev-parse', `HEAD~${trunkN - forkAt}`], env, trunk).trim();
  const forkMs: number[] = [];
  const materializeMs: number[] = [];
  const dirs: Record<'a' | 'b', string> = { a: path.join(tmp, 'a'), b: path.join(tmp, 'b') };
  for (const name of ['a', 'b'] as const) {
    forkMs.push(gitQuick(['branch', name, at], env, trunk));
    materializeMs.push(gitQuick(['worktree', 'add', '-q', dirs[name], name], env, trunk));
  }
  for (let i = 0; i < branchN; i++) {
    commit('a', dirs.a, 2000 + i);
    commit('b', dirs.b, 3000 + i);
  }
  const addMs = gitQuick(['update-ref', 'refs/heads/published', 'a'], env, trunk);
  const after = duBytes(gitDir);
  const checks: Record<string, string> = {};
  for (const name of ['a', 'b'] as const) {
    const n = Number(git(['rev-list', '--count', name], env, trunk).trim());
    checks[`log ${name}`] = n === forkAt + branchN + 1 ? 'ok' : `FAILED: ${n} commits, expected ${forkAt + branchN + 1}`;
  }
  failOnChecks(checks);
  const all = [...commitMs.trunk, ...commitMs.a, ...commitMs.b];
  return {
    ms: r1(all.reduce((s, v) => s + v, 0)),
    // git commands run as children, unmeasured: do not report this Node process's RSS as git's.
    maxRssMiB: undefined,
    commits: all.length,
    medianCommitMs: r1(median(all)),
    trunkMedianMs: r1(median(commitMs.trunk)),
    branchMedianMs: r1(median([...commitMs.a, ...commitMs.b])),
    forkMs: r3(median(forkMs)),
    materializeMs: r1(median(materializeMs)),
    addMs: r3(addMs),
    initMs: r1(initMs),
    files,
    changedBytes,
    fileGrowth: after - before,
    storeBytes: after,
    checks,
  };
}

export const branchDevelopment = defineCell({
  file: import.meta.url,
  id: 'layerfs-branch-dev',
  tool: 'layerfs',
  args: BRANCH_DEV_OPTIONS,
  required: ['dir', 'tmp', 'files'],
  run: layerfsBranchDev,
  peers: [{ id: 'git-branch-dev', tool: 'git', run: gitBranchDev }],
});

runIfMain(import.meta.url, branchDevelopment);
