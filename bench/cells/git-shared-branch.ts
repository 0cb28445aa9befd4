// Cell: the git peer of layerfs-shared-branch: one bare repository, --workers clones, each
// commit is `git add -A && git commit` then `git push`, and on rejection `git pull --rebase`
// (an overlapping shared line resolved to upstream's) and push again, until it lands.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { cellArgs, requireArgs } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { gitEnvPlain } from './_campaign.js';
import { runSharedWorkers, SHARED_OPTIONS, summarize, writeStart } from './_shared-branch.js';

const CELL = 'git-shared-branch';
const a = cellArgs(SHARED_OPTIONS);
const tier = a.tier!;

function git(cwd: string, ...args: string[]): string {
  const r = spawnSync('git', ['-c', 'gc.auto=0', ...args], { cwd, env: gitEnvPlain(), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

try {
  requireArgs(a, ['tmp']);
  const tmp = path.resolve(a.tmp);
  const n = Number(a.workers);
  const commits = Number(a.commits);
  const src = path.join(tmp, 'start');
  writeStart(src, n);
  git(src, 'init', '-q', '-b', 'main');
  git(src, 'add', '-A');
  git(src, 'commit', '-q', '-m', 'init');
  git(tmp, 'clone', '-q', '--bare', src, 'bare.git');
  const clones: string[] = [];
  for (let i = 0; i < n; i++) {
    git(tmp, 'clone', '-q', 'bare.git', `ws${i}`);
    clones.push(path.join(tmp, `ws${i}`));
  }
  const { wallMs, results } = await runSharedWorkers(
    (i) => ['--tool', 'git', '--path', clones[i]!, '--commits', String(commits), '--share', a.share!, ...(a.overlap ? ['--overlap'] : [])],
    n,
  );
  const count = Number(git(path.join(tmp, 'bare.git'), 'rev-list', '--count', 'main').trim()) - 1;
  const checks: Record<string, string> = { history: count === n * commits ? 'ok' : `FAILED: ${count} commits in main, ${n * commits} made` };
  emit({ cell: CELL, tier, ...summarize(wallMs, results), checks });
} catch (err) {
  fail(CELL, tier, err);
}
