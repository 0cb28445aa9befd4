// Cell: the git peer of layerfs-file-edits. Untimed setup: copy the fixture into the scratch
// directory (`cp -a`), `git init && git add -A && git commit` with GIT_DIR outside the tree
// (initMs). Then per op, in the order given (before each op but the first, the file is restored
// to the fixture's bytes and committed, untimed): the same in-place edit with the same bytes and
// mtime (applyFileOp), and `git commit -a -q -m x` timed as a process; growth is `du -sb .git`
// after minus before (a loose zlib object of the whole new file, plus trees and the commit).
//   node --import tsx bench/cells/git-file-edits.ts --dir FIXTURE --tmp SCRATCH --tier "10 MiB" --ops …

import path from 'node:path';
import { cellArgs, requireArgs } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { copyTree } from '../fixtures/copy.js';
import { EDIT_MTIME } from '../fixtures/edits.js';
import { ALL_OPS, applyFileOp, duBytes, EDIT_BYTES, GIT, gitEnv, gitTimed, r1, restoreFile, type FileOp } from './_campaign.js';

const CELL = 'git-file-edits';
const FILE = 'large.bin';
const a = cellArgs({ ops: { type: 'string', default: ALL_OPS.join(',') }, seed: { type: 'string', default: '1' } });
const tier = a.tier!;

try {
  requireArgs(a, ['dir', 'tmp']);
  const ops = a.ops!.split(',').map((s) => s.trim()) as FileOp[];
  const bad = ops.filter((o) => !ALL_OPS.includes(o));
  if (bad.length > 0) throw new Error(`unknown ops: ${bad.join(', ')}`);
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
  emit({
    cell: CELL,
    tier,
    ms: r1(cases.reduce((s, cs) => s + (cs.ms as number), 0)),
    maxRssMiB: r1(maxRss),
    initMs: r1(init.ms),
    storeBytes: duBytes(gitDir),
    cases,
  });
} catch (err) {
  fail(CELL, tier, err);
}
