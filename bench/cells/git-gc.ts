// Cell: the git peer of layerfs-gc's `history` mode. The same history (cells/_gc-history.ts) as
// a git repository: the base committed on `main`, each Branch a git branch of --commits commits
// (`git add -A && git commit`); then all but --keep branches deleted with `git branch -D` and
// `git reflog expire --expire=now --all && git gc --prune=now` timed (ms). Reports .git bytes
// before and after.
//   node --import tsx bench/cells/git-gc.ts --tmp SCRATCH --tier T --branches 50 --commits 20 --keep 5

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cellArgs, requireArgs } from '../lib/args.js';
import { duBytes, emit, fail } from '../lib/cell.js';
import { git, gitEnv, gitTimed } from './_campaign.js';
import { applyCommit, writeBase } from './_gc-history.js';

const CELL = 'git-gc';
const a = cellArgs({ branches: { type: 'string', default: '50' }, commits: { type: 'string', default: '20' }, keep: { type: 'string', default: '5' } });
const tier = a.tier!;

try {
  requireArgs(a, ['tmp']);
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
  emit({ cell: CELL, tier, ms: Math.round(g.ms), maxRssMiB: g.maxRssMiB, buildMs: Math.round(buildMs), branches, commits, keep, beforeBytes, storeBytes: duBytes(gitDir) });
} catch (err) {
  fail(CELL, tier, err);
}
