// Cell: the git peer for importing a tree — `git init && git add -A && git commit`.
// GIT_DIR points into the cell's scratch directory and GIT_WORK_TREE at the fixture, so git never
// writes inside the (shared, cached) fixture. Global/system config is ignored and automatic gc is
// off: a detached background `gc --auto` after the commit would otherwise pack 100k loose objects
// while we measure, and make .git's size a race.
//   node --import tsx bench/cells/git-init.ts --dir FIXTURE --tmp SCRATCH --tier 1000 [--gc]

import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { gitEnv } from './_campaign.js';
import { duAllocatedBytes, duBytes, emit, fail, round1, timeExternal } from '../lib/cell.js';

const CELL = 'git-init';
const { values: a } = parseArgs({
  options: {
    dir: { type: 'string' },
    tmp: { type: 'string' },
    tier: { type: 'string', default: '?' },
    gc: { type: 'boolean', default: false },
  },
});
const tier = a.tier!;

try {
  if (a.dir === undefined || a.tmp === undefined) throw new Error('--dir and --tmp are required');
  // Absolute paths: git resolves a relative GIT_WORK_TREE against its cwd, which is the tree.
  const dir = path.resolve(a.dir);
  const gitDir = path.resolve(a.tmp, 'repo.git');
  const env = gitEnv(gitDir, dir);
  const git = 'git -c gc.auto=0 -c maintenance.auto=false';
  const run = timeExternal(['sh', '-c', `${git} init -q && ${git} add -A && ${git} commit -q -m x`], {
    env,
    cwd: dir,
  });
  const gitBytes = duBytes(gitDir);
  const count = spawnSync('git', ['count-objects', '-v'], { env, encoding: 'utf8' });
  const objects = Number(/^count: (\d+)$/m.exec(count.stdout)?.[1] ?? NaN);
  const out: Record<string, unknown> = {
    ms: round1(run.ms),
    maxRssMiB: round1(run.maxRssMiB),
    storeBytes: gitBytes,
    allocatedBytes: duAllocatedBytes(gitDir),
    objects,
  };
  if (a.gc) {
    const gc = timeExternal(['sh', '-c', `${git} gc -q`], { env, cwd: dir });
    out.gcMs = round1(gc.ms);
    out.gcMaxRssMiB = round1(gc.maxRssMiB);
    out.packedBytes = duBytes(gitDir);
  }
  emit({ cell: CELL, tier, ...out });
} catch (err) {
  fail(CELL, tier, err);
}
