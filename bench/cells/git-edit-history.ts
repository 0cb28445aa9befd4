// Cell: the git peer of layerfs-edit-history. Copy the tree into a scratch work tree, `git init`,
// add and commit it, then the same ROUNDS rounds of edits (cells/_edit-history.ts), each
// committed with `git commit -a`. Then `git gc --aggressive`. Reports .git bytes after the
// import commit gc'd the same way (importBytes) and after the history (storeBytes).
//   node --import tsx bench/cells/git-edit-history.ts --dir FIXTURE --tmp SCRATCH --tier 10000 [--rounds 100]

import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cellArgs, requireArgs } from '../lib/args.js';
import { duBytes, emit, fail } from '../lib/cell.js';
import { gitEnv } from './_campaign.js';
import { applyRound, listFiles, ROUNDS } from './_edit-history.js';

const CELL = 'git-edit-history';
const a = cellArgs({ rounds: { type: 'string' } });
const tier = a.tier!;

try {
  requireArgs(a, ['dir', 'tmp']);
  const rounds = Number(a.rounds ?? ROUNDS);
  const tmp = path.resolve(a.tmp);
  const work = path.join(tmp, 'work');
  execFileSync('cp', ['-a', path.resolve(a.dir), work]);
  const env = gitEnv(path.join(work, '.git'), work);
  const git = (...args: string[]) => execFileSync('git', ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false', ...args], { env, cwd: work, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 26 });
  // The file list first: .git must not be part of it.
  const files = listFiles(work);
  let t = performance.now();
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '-m', 'import');
  const importMs = performance.now() - t;
  let commitMs = 0;
  let editBytes = 0;
  for (let r = 1; r <= rounds; r++) {
    editBytes += applyRound(work, files, r).editBytes;
    t = performance.now();
    git('commit', '-q', '-a', '-m', `round ${r}`);
    commitMs += performance.now() - t;
  }
  const looseBytes = duBytes(path.join(work, '.git'));
  t = performance.now();
  git('gc', '-q', '--aggressive');
  const gcMs = performance.now() - t;
  emit({
    cell: CELL,
    tier,
    ms: Math.round(commitMs),
    importMs: Math.round(importMs),
    gcMs: Math.round(gcMs),
    files: files.length,
    rounds,
    editBytes,
    looseBytes,
    storeBytes: duBytes(path.join(work, '.git')),
  });
} catch (err) {
  fail(CELL, tier, err);
}
