// Cell: how much new content a tree costs when much of it repeats. One fresh Store per case:
//   [--ref DIR]  initLayerStack('ref', DIR) first (untimed setup: the content the tree repeats)
//   case         initLayerStack('tree', CASE_DIR) → case ms; its receipt's bytesInserted (semantic),
//                allocatedGrowth (pages), objects inserted / reused; analyzeDedup afterwards.
// --n N divides the semantic bytes into a per-item figure (per variant, per file).
//   node --import tsx bench/cells/dedup_cdc_locality.ts --cell layerfs-dedup-trees --tmp SCRATCH --tier 10 --n 10 \
//     [--ref REF_DIR] --case NAME=DIR [--case NAME=DIR …]

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEDUP_TREE_OPTIONS } from './args.js';
import { mbps, r1, semanticOf, storeFiles } from './measure.js';
import { duBytes } from './cell.js';
import { GIT, gitEnv, gitTimed } from './git.js';
import { type CellResult, cellSpec, type Given } from './define-cell.js';
import { Client } from '../../lib/sdk/index.js';

async function layerfsDedupTrees(a: Given<typeof DEDUP_TREE_OPTIONS, 'tmp' | 'n' | 'case'>): Promise<CellResult> {
  const n = Number(a.n);
  const cases: Record<string, unknown>[] = [];
  for (const spec of a.case) {
    const eq = spec.indexOf('=');
    const name = spec.slice(0, eq);
    const dir = path.resolve(spec.slice(eq + 1));
    const storePath = path.join(path.resolve(a.tmp), `${name}.layerfs`);
    const c = Client.create(storePath);
    try {
      let refSemantic: number | undefined;
      if (a.ref !== undefined) refSemantic = semanticOf(await c.initLayerStack({ name: 'ref', source: path.resolve(a.ref) }));
      const t = performance.now();
      const r = await c.initLayerStack({ name: 'tree', source: dir });
      const ms = performance.now() - t;
      const semantic = semanticOf(r);
      const logical = typeof r.bytes === 'number' ? r.bytes : undefined;
      const d = c.analyzeDedup();
      c.close();
      const files = storeFiles(storePath);
      cases.push({
        case: name,
        ms: r1(ms),
        files: typeof r.files === 'number' ? r.files : undefined,
        bytes: logical,
        MBps: logical !== undefined ? mbps(logical, ms) : undefined,
        semanticGrowth: semantic,
        allocatedGrowth: r.allocatedGrowth,
        objectsInserted: r.objectsInserted,
        objectsReused: r.objectsReused,
        refSemantic,
        semanticPerItem: semantic !== undefined ? Math.round(semantic / n) : undefined,
        allocatedPerItem: typeof r.allocatedGrowth === 'number' ? Math.round(r.allocatedGrowth / n) : undefined,
        dedupRatio: Math.round(d.dedupRatio * 1000) / 1000,
        uniqueBytes: d.uniqueBytes,
        logicalAll: d.logicalBytes,
        storeBytes: files.bytes,
      });
    } catch (err) {
      try {
        c.close();
      } catch {
        // already closed
      }
      throw err;
    }
  }
  return { ms: r1(cases.reduce((s, cs) => s + (cs.ms as number), 0)), n, cases };
}

// Cell: the git peer of layerfs-dedup-trees. One fresh repository per case (GIT_DIR in the scratch
// directory, auto-gc off):
//   [--ref DIR]  commit DIR alone, then `git gc` (untimed): baseline B0 = du -sb .git
//                (without --ref, B0 = du -sb of a fresh `git init`)
//   case         `git add -A && git commit` of CASE_DIR → case ms; loose growth = du − B0
//                (git stores identical files once, everything else whole, zlib'd)
//   gc           `git gc -q` → gcMs; packed growth = du − B0 (delta compression)
//   node --import tsx bench/cells/dedup_cdc_locality.ts --cell git-dedup-trees --tmp SCRATCH --tier 10 --n 10 [--ref DIR] --case NAME=DIR …
async function gitDedupTrees(a: Given<typeof DEDUP_TREE_OPTIONS, 'tmp' | 'n' | 'case'>): Promise<CellResult> {
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
  return { ms: r1(cases.reduce((s, cs) => s + (cs.ms as number), 0)), maxRssMiB: r1(maxRss), n, cases };
}

export const DEDUP_TREES = cellSpec({
  id: 'layerfs-dedup-trees',
  tool: 'layerfs',
  args: DEDUP_TREE_OPTIONS,
  required: ['tmp', 'n', 'case'],
  run: layerfsDedupTrees,
  peers: [{ id: 'git-dedup-trees', tool: 'git', run: gitDedupTrees }],
});

