// Cell: the git peer of layerfs-dedup-trees. One fresh repository per case (GIT_DIR in the scratch
// directory, auto-gc off):
//   [--ref DIR]  commit DIR alone, then `git gc` (untimed): baseline B0 = du -sb .git
//                (without --ref, B0 = du -sb of a fresh `git init`)
//   case         `git add -A && git commit` of CASE_DIR → case ms; loose growth = du − B0
//                (git stores identical files once, everything else whole, zlib'd)
//   gc           `git gc -q` → gcMs; packed growth = du − B0 (delta compression)
//   node --import tsx bench/cells/git-dedup-trees.ts --tmp SCRATCH --tier 10 --n 10 [--ref DIR] --case NAME=DIR …

import path from 'node:path';
import { cellArgs, requireArgs, DEDUP_TREE_OPTIONS } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { duBytes, GIT, gitEnv, gitTimed, r1 } from './_campaign.js';

const CELL = 'git-dedup-trees';
const a = cellArgs(DEDUP_TREE_OPTIONS);
const tier = a.tier!;

try {
  requireArgs(a, ['tmp', 'n', 'case']);
  const n = Number(a.n);
  const cases: Record<string, unknown>[] = [];
  let maxRss = 0;
  for (const spec of a.case) {
    const eq = spec.indexOf('=');
    const name = spec.slice(0, eq);
    const dir = path.resolve(spec.slice(eq + 1));
    const gitDir = path.join(path.resolve(a.tmp), `${name}.git`);
    if (a.ref !== undefined) {
      const ref = path.resolve(a.ref);
      gitTimed(`${GIT} init -q && ${GIT} add -A && ${GIT} commit -q -m ref && ${GIT} gc -q`, gitEnv(gitDir, ref), ref);
    } else {
      gitTimed(`${GIT} init -q`, gitEnv(gitDir, dir), dir);
    }
    const b0 = duBytes(gitDir);
    const env = gitEnv(gitDir, dir);
    const add = gitTimed(`${GIT} add -A && ${GIT} commit -q -m tree`, env, dir);
    const loose = duBytes(gitDir) - b0;
    const gc = gitTimed(`${GIT} gc -q`, env, dir);
    const packedBytes = duBytes(gitDir);
    maxRss = Math.max(maxRss, add.maxRssMiB, gc.maxRssMiB);
    cases.push({
      case: name,
      ms: r1(add.ms),
      maxRssMiB: r1(add.maxRssMiB),
      gcMs: r1(gc.ms),
      gcMaxRssMiB: r1(gc.maxRssMiB),
      looseGrowth: loose,
      packedGrowth: packedBytes - b0,
      loosePerItem: Math.round(loose / n),
      packedPerItem: Math.round((packedBytes - b0) / n),
      storeBytes: packedBytes,
    });
  }
  emit({ cell: CELL, tier, ms: r1(cases.reduce((s, cs) => s + (cs.ms as number), 0)), maxRssMiB: r1(maxRss), n, cases });
} catch (err) {
  fail(CELL, tier, err);
}
