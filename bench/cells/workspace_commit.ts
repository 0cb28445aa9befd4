// Cell: commit of a small change in a Workspace of an N-file tree. Steps, each timed apart:
//   init        Client.create + initLayerStack(fixture)               → initMs
//   fork        forkBranch from the genesis Layer                     (untimed, ~0)
//   materialize createWorkspace(branch, { at: SCRATCH/ws })           → materializeMs
//   edit        editSet/applyEdits on the Workspace (a fresh copy, so the fixture stays pristine)
//   commit      commitWorkspace                                       → ms (commitMs)
// Between materialize and commit the client is closed (checkpointing the WAL) and reconnected, and
// the new connection is warmed by a no-op commit of the unedited Workspace (UpToDate; its time is
// noopCommitMs), so the timed commit runs warm, as for an in-process SDK user, and Store file sizes
// before/after are the commit's own. Growth: the receipt (bytesInserted = semantic,
// allocatedGrowth = SQLite pages in use) and Store file + WAL stat'ed before, right after, and
// after the final close. After timing, the committed Branch is read back and compared with the
// edited files (a benchmark of a no-op is worthless).
//   node --import tsx bench/cells/workspace_commit.ts --cell layerfs-workspace-commit --dir FIXTURE --tmp SCRATCH --tier 1000 \
//     --files 1000 [--edits 10 --edit-bytes 64 --edit-mode mixed --seed 1]

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { TREE_EDIT_OPTIONS, treeEdits } from '../lib/args.js';
import { duAllocatedBytes, duBytes, round1, timeExternal } from '../lib/cell.js';
import { applyEdits } from '../fixtures/tree.js';
import { storeFiles } from '../lib/measure.js';
import { openWorkspace } from '../lib/workspace-setup.js';
import { gitEnv } from '../lib/git.js';
import { copyTree } from '../fixtures/copy.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';

async function layerfsWorkspaceCommit(a: Given<typeof TREE_EDIT_OPTIONS, 'dir' | 'tmp' | 'files'>): Promise<CellResult> {
  const tmp = path.resolve(a.tmp);
  const storePath = path.join(tmp, 'bench.layerfs');
  const wsDir = path.join(tmp, 'ws');
  const edits = treeEdits(a);

  // Import (initMs, as in init_namespace), fork, materialize, then close and reconnect: the close
  // checkpoints the WAL, so Store + WAL sizes from here on are the commit's own growth. The no-op
  // commit of the still-clean Workspace (UpToDate, writes nothing) warms the new connection the
  // way an SDK user's earlier calls would; its time is the cost of finding changes alone (walk +
  // lstat of every path against the stat cache).
  const { c, branch, ws, initMs, materializeMs, noopMs, filesBefore } = await openWorkspace(storePath, a.dir, wsDir);
  // The no-op commit stores no object: counting from here counts the edit commit's.
  const infoBefore = c.info();
  const filesNoop = storeFiles(storePath);

  applyEdits(wsDir, edits);
  // "Changed bytes": the whole content of every edited file, what a store of whole files writes.
  const changedBytes = edits.reduce((s, e) => s + fs.statSync(path.join(wsDir, e.relPath)).size, 0);
  const editBytes = edits.reduce((s, e) => s + e.data.length, 0);

  const t = performance.now();
  const r = await c.commitWorkspace(ws.id);
  const commitMs = performance.now() - t;

  const filesLive = storeFiles(storePath);
  const infoAfter = c.info();
  if (r.outcome !== 'Created') throw new Error(`commitWorkspace: outcome ${r.outcome}, expected Created (${JSON.stringify(r).slice(0, 300)})`);
  // Read back: the Branch head must hold the edited bytes.
  for (const e of edits) {
    const want = fs.readFileSync(path.join(wsDir, e.relPath));
    const got = c.cat(branch, e.relPath);
    if (!want.equals(got)) throw new Error(`after commit, ${e.relPath} in Branch ${branch} differs from the Workspace (${got.length} vs ${want.length} bytes)`);
  }
  await c.close();
  const filesAfter = storeFiles(storePath);

  const semantic = r.bytesInserted ?? r.semanticGrowth;
  const allocated = r.allocatedGrowth;
  return {
    ms: round1(commitMs),
    receiptMs: round1(r.ms),
    initMs: round1(initMs),
    materializeMs: round1(materializeMs),
    commitPerInit: Math.round((commitMs / initMs) * 10000) / 10000,
    files: Number(a.files),
    editedFiles: edits.length,
    changedBytes,
    editBytes,
    changedPaths: r.changedPaths,
    objectsInserted: r.objectsInserted,
    objectsReused: r.objectsReused,
    bytesInserted: r.bytesInserted,
    semanticGrowth: semantic,
    allocatedGrowth: allocated,
    semanticBeyondChanged: semantic !== undefined ? semantic - changedBytes : undefined,
    allocatedBeyondChanged: allocated !== undefined ? allocated - changedBytes : undefined,
    noopCommitMs: round1(noopMs),
    // Store file + WAL: after the checkpointing close (before), right after the commit (WAL as
    // it is: the frames the commit appended, i.e. bytes written) and after the final close.
    fileGrowthLive: filesLive.bytes - filesBefore.bytes,
    fileGrowth: filesAfter.bytes - filesBefore.bytes,
    fileBeyondChanged: filesAfter.bytes - filesBefore.bytes - changedBytes,
    noopFileGrowth: filesNoop.bytes - filesBefore.bytes,
    objects: infoAfter.objects,
    objectsAdded: infoAfter.objects - infoBefore.objects,
    // After close (WAL checkpointed into the Store file).
    storeBytes: filesAfter.bytes,
  };
}

// Cell: the git peer of layerfs-workspace-commit. Untimed setup: copy the fixture into the scratch
// directory (copyTree; the cached fixture is never touched), `git init && git add -A && git
// commit` with GIT_DIR outside the tree, then the same deterministic edits. Timed: `git commit -a
// -q -m x` (stat of every tracked file + hashing and writing the changed blobs and trees).
// Global/system config is ignored and automatic gc is off, as in git-init.
//   node --import tsx bench/cells/workspace_commit.ts --cell git-workspace-commit --dir FIXTURE --tmp SCRATCH --tier 1000 \
//     --files 1000 [--edits 10 --edit-bytes 64 --edit-mode mixed --seed 1]
async function gitWorkspaceCommit(a: Given<typeof TREE_EDIT_OPTIONS, 'dir' | 'tmp' | 'files'>): Promise<CellResult> {
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
  return {
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
  };
}

export const workspaceCommit = defineCell({
  file: import.meta.url,
  id: 'layerfs-workspace-commit',
  tool: 'layerfs',
  args: TREE_EDIT_OPTIONS,
  required: ['dir', 'tmp', 'files'],
  run: layerfsWorkspaceCommit,
  peers: [{ id: 'git-workspace-commit', tool: 'git', run: gitWorkspaceCommit }],
});

runIfMain(import.meta.url, workspaceCommit);
