// Cell: how much new content a tree costs when much of it repeats. One fresh Store per case:
//   [--ref DIR]  initLayerStack('ref', DIR) first (untimed setup: the content the tree repeats)
//   case         initLayerStack('tree', CASE_DIR) → case ms; its receipt's bytesInserted (semantic),
//                allocatedGrowth (pages), objects inserted / reused; analyzeDedup afterwards.
// --n N divides the semantic bytes into a per-item figure (per variant, per file).
//   node --import tsx bench/cells/layerfs-dedup-trees.ts --tmp SCRATCH --tier 10 --n 10 \
//     [--ref REF_DIR] --case NAME=DIR [--case NAME=DIR …]

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cellArgs, requireArgs, DEDUP_TREE_OPTIONS } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { loadCampaignSdk, mbps, r1, semanticOf, storeFiles } from './_campaign.js';

const CELL = 'layerfs-dedup-trees';
const a = cellArgs(DEDUP_TREE_OPTIONS);
const tier = a.tier!;

try {
  requireArgs(a, ['tmp', 'n', 'case']);
  const n = Number(a.n);
  const sdk = await loadCampaignSdk();
  const cases: Record<string, unknown>[] = [];
  for (const spec of a.case) {
    const eq = spec.indexOf('=');
    const name = spec.slice(0, eq);
    const dir = path.resolve(spec.slice(eq + 1));
    const storePath = path.join(path.resolve(a.tmp), `${name}.layerfs`);
    const c = sdk.Client.create(storePath);
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
  emit({ cell: CELL, tier, ms: r1(cases.reduce((s, cs) => s + (cs.ms as number), 0)), n, cases });
} catch (err) {
  fail(CELL, tier, err);
}
