// Cell: the git peer of layerfs-branch-dev. Untimed setup: copy the fixture into SCRATCH/trunk,
// `git init && git add -A && git commit` there (initMs). Then the same story with the same edits
// and mtimes: --trunk commits (`git commit -a -q -m x`, each timed as one process), `git branch`
// a and b at trunk's commit --fork-at (forkMs), `git worktree add` for each (materializeMs: the
// checkout of the whole tree), --branch-commits rounds a then b, and "add": `git update-ref
// refs/heads/published a` (git's nearest equivalent of publishing a Branch head: a ref update).
//   node --import tsx bench/cells/git-branch-dev.ts --dir FIXTURE --tmp SCRATCH --tier 1,000 --files 1000

import path from 'node:path';
import { cellArgs, requireArgs, BRANCH_DEV_OPTIONS } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { copyTree } from '../fixtures/copy.js';
import { devEdit, duBytes, git, gitEnvPlain, gitInitCommit, gitQuick, median, r1, r3 } from './_campaign.js';

const CELL = 'git-branch-dev';
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
  const all = [...commitMs.trunk, ...commitMs.a, ...commitMs.b];
  emit({
    cell: CELL,
    tier,
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
  });
} catch (err) {
  fail(CELL, tier, err);
}
