// Cell: 4 KiB edits of one large file in a materialized Workspace, each committed. Steps:
//   init        Client.create + initLayerStack(FIXTURE, one file large.bin)      → initMs
//   materialize forkBranch + createWorkspace(branch, { at: SCRATCH/ws })          → materializeMs
//   warm        close + reconnect (checkpoints the WAL), one no-op commitWorkspace → noopMs
//   per op      applyFileOp (in place, untimed; see lib/file-ops.ts), commitWorkspace → case ms
// The ops run one after another in the same Workspace, in the order given by --ops; before each op
// but the first, the file is restored to the fixture's bytes and that restore is committed
// (untimed, restoreCommitMs), so every op edits the same original file. Per op: the receipt's bytesInserted (semantic),
// allocatedGrowth (pages), objects inserted / reused. After each commit the Branch's file is
// streamed back and compared with the Workspace file (untimed).
//   node --import tsx bench/cells/edit_length_preserving.ts --cell layerfs-file-edits --dir FIXTURE --tmp SCRATCH --tier "10 MiB" \
//     --ops overwrite-head,overwrite-middle,overwrite-tail

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { duBytes } from './cell.js';
import { EDIT_MTIME } from '../fixtures/edits.js';
import { ALL_OPS, applyFileOp, compareStored, EDIT_BYTES, type FileOp, restoreFile } from './file-ops.js';
import { r1, semanticOf, storeFiles } from './measure.js';
import { copyTree } from '../fixtures/copy.js';
import { GIT, gitEnv, gitTimed } from './git.js';
import { type CellResult, cellSpec, type Given } from './define-cell.js';
import { openWorkspace } from './workspace-setup.js';

const FILE = 'large.bin';
export const FILE_EDIT_OPTIONS = { ops: { type: 'string', default: ALL_OPS.join(',') }, seed: { type: 'string', default: '1' } } as const;

/** The ops of --ops, each a known one. */
function parseOps(list: string): FileOp[] {
  const ops = list.split(',').map((s) => s.trim()) as FileOp[];
  const bad = ops.filter((o) => !ALL_OPS.includes(o));
  if (bad.length > 0) throw new Error(`unknown ops: ${bad.join(', ')} (known: ${ALL_OPS.join(', ')})`);
  return ops;
}

async function layerfsFileEdits(a: Given<typeof FILE_EDIT_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const ops = parseOps(a.ops!);
  const tmp = path.resolve(a.tmp);
  const storePath = path.join(tmp, 'bench.layerfs');
  const wsDir = path.join(tmp, 'ws');
  const wsFile = path.join(wsDir, FILE);

  const { c, branch, ws, init, initMs, materializeMs, noopMs, filesBefore, rssBeforeCommitsMiB } = await openWorkspace(storePath, a.dir, wsDir);
  let t: number;

  const cases: Record<string, unknown>[] = [];
  const original = path.join(path.resolve(a.dir), FILE);
  let restoreCommitMs = 0;
  for (let k = 0; k < ops.length; k++) {
    const op = ops[k]!;
    if (k > 0) {
      // Back to the original content (untimed commit), so that every op edits the same file.
      restoreFile(wsFile, original, EDIT_MTIME + 100 + k);
      t = performance.now();
      const back = await c.commitWorkspace(ws.id);
      restoreCommitMs += performance.now() - t;
      if (back.outcome !== 'Created') throw new Error(`restore before ${op}: outcome ${back.outcome}, expected Created`);
    }
    const edit = applyFileOp(wsFile, op, Number(a.seed), EDIT_MTIME + k + 1);
    t = performance.now();
    const r = await c.commitWorkspace(ws.id);
    const ms = performance.now() - t;
    if (r.outcome !== 'Created') throw new Error(`${op}: commitWorkspace outcome ${r.outcome}, expected Created (${JSON.stringify(r).slice(0, 300)})`);
    const diff = compareStored(c, branch, FILE, wsFile);
    if (diff !== null) throw new Error(`${op}: after commit, ${diff}`);
    cases.push({
      case: op,
      ms: r1(ms),
      receiptMs: typeof r.ms === 'number' ? r1(r.ms) : undefined,
      bytes: edit.sizeAfter,
      sizeBefore: edit.sizeBefore,
      offset: edit.offset,
      editBytes: EDIT_BYTES,
      semanticGrowth: semanticOf(r),
      allocatedGrowth: r.allocatedGrowth,
      objectsInserted: r.objectsInserted,
      objectsReused: r.objectsReused,
      changedPaths: r.changedPaths,
      phases: r.phases,
    });
  }
  const info = c.info();
  await c.close();
  const filesAfter = storeFiles(storePath);
  return {
    ms: r1(cases.reduce((s, cs) => s + (cs.ms as number), 0)),
    initMs: r1(initMs),
    materializeMs: r1(materializeMs),
    noopMs: r1(noopMs),
    // Peak RSS after import + materialize; maxRssMiB (after the commits) minus this is the commits'.
    rssBeforeCommitsMiB,
    restoreCommitMs: r1(restoreCommitMs),
    initSemantic: semanticOf(init),
    objects: info.objects,
    storeBytes: filesAfter.bytes,
    fileGrowth: filesAfter.bytes - filesBefore.bytes,
    cases,
  };
}

// Cell: the git peer of layerfs-file-edits. Untimed setup: copy the fixture into the scratch
// directory (`cp -a`), `git init && git add -A && git commit` with GIT_DIR outside the tree
// (initMs). Then per op, in the order given (before each op but the first, the file is restored
// to the fixture's bytes and committed, untimed): the same in-place edit with the same bytes and
// mtime (applyFileOp), and `git commit -a -q -m x` timed as a process; growth is `du -sb .git`
// after minus before (a loose zlib object of the whole new file, plus trees and the commit).
//   node --import tsx bench/cells/edit_length_preserving.ts --cell git-file-edits --dir FIXTURE --tmp SCRATCH --tier "10 MiB" --ops …

async function gitFileEdits(a: Given<typeof FILE_EDIT_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const ops = parseOps(a.ops!);
  const tmp = path.resolve(a.tmp);
  const work = path.join(tmp, 'wt');
  const gitDir = path.join(tmp, 'repo.git');
  copyTree(path.resolve(a.dir), work);
  const env = gitEnv(gitDir, work);
  const init = gitTimed(`${GIT} init -q && ${GIT} add -A && ${GIT} commit -q -m init`, env, work);

  const cases: Record<string, unknown>[] = [];
  let maxRss = init.maxRssMiB;
  const original = path.join(path.resolve(a.dir), FILE);
  for (let k = 0; k < ops.length; k++) {
    const op = ops[k]!;
    if (k > 0) {
      // Back to the original content, committed untimed, as in the layerfs cell.
      restoreFile(path.join(work, FILE), original, EDIT_MTIME + 100 + k);
      gitTimed(`${GIT} commit -a -q -m restore`, env, work);
    }
    const edit = applyFileOp(path.join(work, FILE), op, Number(a.seed), EDIT_MTIME + k + 1);
    const before = duBytes(gitDir);
    const run = gitTimed(`${GIT} commit -a -q -m x`, env, work);
    const after = duBytes(gitDir);
    maxRss = Math.max(maxRss, run.maxRssMiB);
    cases.push({
      case: op,
      ms: r1(run.ms),
      maxRssMiB: r1(run.maxRssMiB),
      bytes: edit.sizeAfter,
      editBytes: EDIT_BYTES,
      fileGrowth: after - before,
      storeBytes: after,
    });
  }
  return {
    ms: r1(cases.reduce((s, cs) => s + (cs.ms as number), 0)),
    maxRssMiB: r1(maxRss),
    initMs: r1(init.ms),
    storeBytes: duBytes(gitDir),
    cases,
  };
}

export const FILE_EDITS = cellSpec({
  id: 'layerfs-file-edits',
  tool: 'layerfs',
  required: ['dir', 'tmp'],
  args: FILE_EDIT_OPTIONS,
  run: layerfsFileEdits,
  peers: [{ id: 'git-file-edits', tool: 'git', run: gitFileEdits }],
});

