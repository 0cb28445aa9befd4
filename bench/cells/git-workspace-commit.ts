// Cell: the git peer of layerfs-workspace-commit. Untimed setup: copy the fixture into the scratch
// directory (copyTree; the cached fixture is never touched), `git init && git add -A && git
// commit` with GIT_DIR outside the tree, then the same deterministic edits. Timed: `git commit -a
// -q -m x` (stat of every tracked file + hashing and writing the changed blobs and trees).
// Global/system config is ignored and automatic gc is off, as in git-init.
//   node --import tsx bench/cells/git-workspace-commit.ts --dir FIXTURE --tmp SCRATCH --tier 1000 \
//     --files 1000 [--edits 10 --edit-bytes 64 --edit-mode mixed --seed 1]

import fs from 'node:fs';
import path from 'node:path';
import { cellArgs, requireArgs, TREE_EDIT_OPTIONS, treeEdits } from '../lib/args.js';
import { gitEnv } from './_campaign.js';
import { duAllocatedBytes, duBytes, emit, fail, round1, timeExternal } from '../lib/cell.js';
import { copyTree } from '../fixtures/copy.js';
import { applyEdits } from '../fixtures/tree.js';

const CELL = 'git-workspace-commit';
const a = cellArgs(TREE_EDIT_OPTIONS);
const tier = a.tier!;

try {
  requireArgs(a, ['dir', 'tmp', 'files']);
  const tmp = path.resolve(a.tmp);
  const work = path.join(tmp, 'wt');
  const gitDir = path.join(tmp, 'repo.git');
  const edits = treeEdits(a);
  copyTree(path.resolve(a.dir), work);
  const env = gitEnv(gitDir, work);
  const git = 'git -c gc.auto=0 -c maintenance.auto=false';
  const setup = timeExternal(['sh', '-c', `${git} init -q && ${git} add -A && ${git} commit -q -m init`], { env, cwd: work });

  applyEdits(work, edits);
  const changedBytes = edits.reduce((s, e) => s + fs.statSync(path.join(work, e.relPath)).size, 0);
  const editBytes = edits.reduce((s, e) => s + e.data.length, 0);

  const before = duBytes(gitDir);
  const beforeAlloc = duAllocatedBytes(gitDir);
  const run = timeExternal(['sh', '-c', `${git} commit -a -q -m x`], { env, cwd: work });
  const after = duBytes(gitDir);
  const afterAlloc = duAllocatedBytes(gitDir);
  emit({
    cell: CELL,
    tier,
    ms: round1(run.ms),
    maxRssMiB: round1(run.maxRssMiB),
    initMs: round1(setup.ms),
    files: Number(a.files),
    editedFiles: edits.length,
    changedBytes,
    editBytes,
    // .git growth: loose zlib objects (blobs, trees, commit) and the rewritten index.
    fileGrowth: after - before,
    allocatedGrowth: afterAlloc - beforeAlloc,
    fileBeyondChanged: after - before - changedBytes,
    storeBytes: after,
  });
} catch (err) {
  fail(CELL, tier, err);
}
