// Cell: the git peer of layerfs-multi-ws. Setup (untimed): copy the fixture into SCRATCH/main,
// `git init && git add -A && git commit`, one `git worktree add -b wI` per worker. Then one worker
// process per worktree (_ws-worker.ts --tool git), all started together, each making --commits
// commits of the same edits as layerfs (`git commit -a`, each timed as one process). `ms` is the
// wall time from the start signal to the last worker's end; growth is `du -sb .git`.
//   node --import tsx bench/cells/git-multi-ws.ts --dir FIXTURE --tmp SCRATCH --tier 2 --files 1000 --workers 2 --commits 20

import path from 'node:path';
import { cellArgs, requireArgs, MULTI_WS_OPTIONS } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { copyTree } from '../fixtures/copy.js';
import { duBytes, git, gitEnvPlain, gitInitCommit, r1 } from './_campaign.js';
import { runWorkers, summarize } from './_ws-parallel.js';

const CELL = 'git-multi-ws';
const a = cellArgs(MULTI_WS_OPTIONS);
const tier = a.tier!;

try {
  requireArgs(a, ['dir', 'tmp', 'files']);
  const tmp = path.resolve(a.tmp);
  const n = Number(a.workers);
  const commits = Number(a.commits);
  const main = path.join(tmp, 'main');
  const env = gitEnvPlain();
  copyTree(path.resolve(a.dir), main);
  const initMs = gitInitCommit(env, main);
  const dirs: string[] = [];
  for (let i = 0; i < n; i++) {
    dirs.push(path.join(tmp, `w${i}`));
    git(['worktree', 'add', '-q', '-b', `w${i}`, dirs[i]!], env, main);
  }
  const gitDir = path.join(main, '.git');
  const before = duBytes(gitDir);
  const { wallMs, results } = await runWorkers((i) => ['--tool', 'git', '--path', dirs[i]!, '--files', a.files!, '--commits', String(commits)], n);
  const checks: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    const len = Number(git(['rev-list', '--count', `w${i}`], env, main).trim()) - 1;
    checks[`log w${i}`] = len === commits ? 'ok' : `FAILED: ${len} commits, expected ${commits}`;
  }
  const after = duBytes(gitDir);
  const s = summarize(wallMs, results);
  emit({
    cell: CELL,
    tier,
    ...s,
    initMs: r1(initMs),
    fileGrowth: after - before,
    storeBytes: after,
    // The workers are Node processes running git as children: their RSS is not git's.
    maxRssMiB: undefined,
    checks,
  });
} catch (err) {
  fail(CELL, tier, err);
}
