// Cell: the git peer of layerfs-payload. Import: `git init && git add -A && git commit` of the
// fixture (GIT_DIR in the scratch directory, auto-gc off) → ms. Full read: `git cat-file blob
// HEAD:large.bin | cat > /dev/null` → readMs. git has no range read either (a blob is one zlib
// stream), so random reads are not measured for git.
//   node --import tsx bench/cells/git-payload.ts --dir FIXTURE --tmp SCRATCH --tier "10 MiB"

import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { emit, fail } from '../lib/cell.js';
import { duBytes, GIT, gitEnv, gitTimed, mbps, r1 } from './_campaign.js';

const CELL = 'git-payload';
const { values: a } = parseArgs({
  options: { dir: { type: 'string' }, tmp: { type: 'string' }, tier: { type: 'string', default: '?' } },
});
const tier = a.tier!;

try {
  if (a.dir === undefined || a.tmp === undefined) throw new Error('--dir and --tmp are required');
  const dir = path.resolve(a.dir);
  const gitDir = path.join(path.resolve(a.tmp), 'repo.git');
  const env = gitEnv(gitDir, dir);
  const size = fs.statSync(path.join(dir, 'large.bin')).size;
  const imp = gitTimed(`${GIT} init -q && ${GIT} add -A && ${GIT} commit -q -m x`, env, dir);
  const storeBytes = duBytes(gitDir);
  const read = gitTimed(`${GIT} cat-file blob HEAD:large.bin | cat > /dev/null`, env, dir);
  emit({
    cell: CELL,
    tier,
    ms: r1(imp.ms),
    maxRssMiB: r1(Math.max(imp.maxRssMiB, read.maxRssMiB)),
    files: 1,
    bytes: size,
    importMBps: mbps(size, imp.ms),
    readMs: r1(read.ms),
    readMBps: mbps(size, read.ms),
    storeBytes,
  });
} catch (err) {
  fail(CELL, tier, err);
}
