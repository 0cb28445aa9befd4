// Cell: the git peer of layerfs-workspace-commit. Untimed setup: copy the fixture into the scratch
// directory (copyTree; the cached fixture is never touched), `git init && git add -A && git
// commit` with GIT_DIR outside the tree, then the same deterministic edits. Timed: `git commit -a
// -q -m x` (stat of every tracked file + hashing and writing the changed blobs and trees).
// Global/system config is ignored and automatic gc is off, as in git-init.
//   node --import tsx bench/cells/git-workspace-commit.ts --dir FIXTURE --tmp SCRATCH --tier 1000 \
//     --files 1000 [--edits 10 --edit-bytes 64 --edit-mode mixed --seed 1]

import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { duAllocatedBytes, duBytes, emit, fail, round1, timeExternal } from '../lib/cell.js';
import { copyTree } from '../fixtures/copy.js';
import { applyEdits, editSet, treeParams, type EditOptions } from '../fixtures/tree.js';

const CELL = 'git-workspace-commit';
const { values: a } = parseArgs({
  options: {
    dir: { type: 'string' },
    tmp: { type: 'string' },
    tier: { type: 'string', default: '?' },
    files: { type: 'string' },
    edits: { type: 'string', default: '10' },
    'edit-bytes': { type: 'string', default: '64' },
    'edit-mode': { type: 'string', default: 'mixed' },
    seed: { type: 'string', default: '1' },
  },
});
const tier = a.tier!;

try {
  if (a.dir === undefined || a.tmp === undefined || a.files === undefined) throw new Error('--dir, --tmp and --files are required');
  const tmp = path.resolve(a.tmp);
  const work = path.join(tmp, 'wt');
  const gitDir = path.join(tmp, 'repo.git');
  const edits = editSet(treeParams(Number(a.files)), {
    k: Number(a.edits),
    seed: Number(a.seed),
    mode: a['edit-mode'] as EditOptions['mode'],
    editBytes: Number(a['edit-bytes']),
  });
  copyTree(path.resolve(a.dir), work);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_DIR: gitDir,
    GIT_WORK_TREE: work,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'bench',
    GIT_AUTHOR_EMAIL: 'bench@example.invalid',
    GIT_COMMITTER_NAME: 'bench',
    GIT_COMMITTER_EMAIL: 'bench@example.invalid',
    GIT_AUTHOR_DATE: '1700000000 +0000',
    GIT_COMMITTER_DATE: '1700000000 +0000',
  };
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
