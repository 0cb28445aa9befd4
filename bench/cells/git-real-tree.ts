// Cell: the git (and cp, rm, tar) peers of layerfs-real-tree on the same two releases:
//   cp          cp -a A work/ (the peer of materialize and export)               → cpMs
//   tar         tar c A > /dev/null (reading the tree once)                       → tarMs
//   import      git init && git add -A && git commit (release A)                  → importMs
//   rsync       rsync -a --delete B/ work/                                        → rsyncMs
//   commit      git add -A && git commit (B over A)                               → commitMs
//   loose       du -sb .git after both, as written                                → looseBytes
//   gc          git gc                                                            → gcMs, gcBytes
//   aggressive  git gc --aggressive                                               → aggressiveMs, aggressiveBytes
//   rm          rm -rf work/                                                      → rmMs
// Global/system config is ignored and automatic gc is off, as in the other git cells.
//   node bench/cells/git-real-tree.ts --a DIR --b DIR --tmp SCRATCH --tier LABEL

import path from 'node:path';
import { parseArgs } from 'node:util';
import { duBytes, emit, fail, round1, timeExternal } from '../lib/cell.js';
import { GIT as git, gitEnv } from './_campaign.js';

const CELL = 'git-real-tree';
const { values: a } = parseArgs({ options: { a: { type: 'string' }, b: { type: 'string' }, tmp: { type: 'string' }, tier: { type: 'string', default: '?' } } });
const tier = a.tier!;

try {
  if (!a.a || !a.b || !a.tmp) throw new Error('--a, --b and --tmp are required');
  const tmp = path.resolve(a.tmp);
  const work = path.join(tmp, 'work');
  const gitDir = path.join(tmp, 'repo.git');
  const A = path.resolve(a.a);
  const B = path.resolve(a.b);
  const cp = timeExternal(['cp', '-a', A, work]);
  const tar = timeExternal(['sh', '-c', `tar cf - -C ${JSON.stringify(A)} . > /dev/null`]);
  const env = gitEnv(gitDir, work);
  const imp = timeExternal(['sh', '-c', `${git} init -q && ${git} add -A && ${git} commit -q -m A`], { env, cwd: work });
  const rsync = timeExternal(['rsync', '-a', '--delete', '--exclude=/.git', `${B}/`, `${work}/`]);
  const commit = timeExternal(['sh', '-c', `${git} add -A && ${git} commit -q -m B`], { env, cwd: work });
  const looseBytes = duBytes(gitDir);
  const gc = timeExternal(['sh', '-c', `${git} gc -q`], { env, cwd: work });
  const gcBytes = duBytes(gitDir);
  const aggressive = timeExternal(['sh', '-c', `${git} gc -q --aggressive`], { env, cwd: work });
  const aggressiveBytes = duBytes(gitDir);
  const rm = timeExternal(['rm', '-rf', work]);
  emit({
    cell: CELL,
    tier,
    ms: round1(commit.ms),
    maxRssMiB: round1(Math.max(imp.maxRssMiB, commit.maxRssMiB)),
    cpMs: round1(cp.ms),
    tarMs: round1(tar.ms),
    importMs: round1(imp.ms),
    rsyncMs: round1(rsync.ms),
    commitMs: round1(commit.ms),
    storeBytes: gcBytes,
    looseBytes,
    gcMs: round1(gc.ms),
    gcBytes,
    aggressiveMs: round1(aggressive.ms),
    aggressiveBytes,
    rmMs: round1(rm.ms),
    bytes: duBytes(B),
  });
} catch (err) {
  fail(CELL, tier, err);
}
