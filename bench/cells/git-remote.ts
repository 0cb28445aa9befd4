// Cell: the git peer of layerfs-remote. Untimed setup: copy the fixture, `git init && git add -A
// && git commit`, `git init --bare` of an empty remote on the same disk. Timed, each apart:
//   push        git push of the commit to the empty bare repository    → ms (pushMs)
//   clone       git clone --no-local of it (with checkout, as specified) → cloneMs;
//               and --no-checkout (objects only, like a Store clone)     → cloneBareMs
//   push10      after the same 10 edits and `git commit -a`, git push    → push10Ms
// Bytes: growth of the bare repository (du -sb), what the push wrote there.
//   node --import tsx bench/cells/git-remote.ts --dir FIXTURE --tmp SCRATCH --tier 1000 --files 1000

import fs from 'node:fs';
import path from 'node:path';
import { cellArgs, requireArgs, TREE_EDIT_OPTIONS, treeEdits } from '../lib/args.js';
import { gitEnv, GIT } from './_campaign.js';
import { duBytes, emit, fail, round1, timeExternal } from '../lib/cell.js';
import { copyTree } from '../fixtures/copy.js';
import { applyEdits } from '../fixtures/tree.js';

const CELL = 'git-remote';
const a = cellArgs(TREE_EDIT_OPTIONS);
const tier = a.tier!;

try {
  requireArgs(a, ['dir', 'tmp', 'files']);
  const tmp = path.resolve(a.tmp);
  const work = path.join(tmp, 'wt');
  const gitDir = path.join(tmp, 'repo.git');
  const bare = path.join(tmp, 'remote.git');
  copyTree(path.resolve(a.dir), work);
  const env = gitEnv(gitDir, work);
  timeExternal(['sh', '-c', `${GIT} init -q -b main && ${GIT} add -A && ${GIT} commit -q -m init`], { env, cwd: work });
  const plain = { ...env };
  delete plain.GIT_DIR;
  delete plain.GIT_WORK_TREE;
  timeExternal(['git', 'init', '-q', '--bare', bare], { env: plain, cwd: tmp });
  const before = duBytes(bare);
  const push = timeExternal(['sh', '-c', `${GIT} push -q ${bare} main`], { env, cwd: work });
  const pushBytes = duBytes(bare) - before;
  const clone = timeExternal(['sh', '-c', `${GIT} clone -q --no-local ${bare} ${path.join(tmp, 'c1')}`], { env: plain, cwd: tmp });
  const cloneBare = timeExternal(['sh', '-c', `${GIT} clone -q --no-local --no-checkout ${bare} ${path.join(tmp, 'c2')}`], { env: plain, cwd: tmp });
  const edits = treeEdits(a);
  applyEdits(work, edits);
  const changedBytes = edits.reduce((s, e) => s + fs.statSync(path.join(work, e.relPath)).size, 0);
  timeExternal(['sh', '-c', `${GIT} commit -a -q -m x`], { env, cwd: work });
  const mid = duBytes(bare);
  const push10 = timeExternal(['sh', '-c', `${GIT} push -q ${bare} main`], { env, cwd: work });
  emit({
    cell: CELL,
    tier,
    ms: round1(push.ms),
    pushMs: round1(push.ms),
    cloneMs: round1(clone.ms),
    cloneBareMs: round1(cloneBare.ms),
    push10Ms: round1(push10.ms),
    maxRssMiB: round1(Math.max(push.maxRssMiB, clone.maxRssMiB)),
    files: Number(a.files),
    pushBytes,
    push10Bytes: duBytes(bare) - mid,
    changedBytes,
    remoteBytes: duBytes(bare),
  });
} catch (err) {
  fail(CELL, tier, err);
}
