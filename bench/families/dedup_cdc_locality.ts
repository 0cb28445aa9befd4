// Family dedup_cdc_locality: a 1 MiB random reference and N variants of it (N = 1 / 10 / 100 /
// 500; 1 and 2 quick), each with one small edit, imported as one tree into a Store that already
// holds the reference: how many new bytes does each variant cost? Content-defined chunking should
// keep it near the edit's chunks (~16 KiB chunks), except when every chunk is touched.

import { warmCache } from '../lib/warm.js';
import { CDC_KINDS, ensureCdcRef, ensureCdcTree } from '../fixtures/dedup.js';
import { splitCases, type CampaignFamily } from '../lib/campaign-table.js';
import { dedupCharts, dedupTable } from '../lib/dedup-table.js';
import { useFixture } from '../lib/use-fixture.js';
import { dedupTrees } from '../cells/dedup_cdc_locality.js';
import { runWithPeers } from '../lib/run-cell.js';

const family: CampaignFamily = {
  name: 'dedup_cdc_locality',
  title: 'CDC locality: N variants of a 1 MiB file',
  description:
    'Fixture: `ref.bin`, 1 MiB of seeded random bytes, and N variants `v0000.bin` …, each `ref.bin` ' +
    'with one edit at a seeded position — overwrite-64B (64 bytes replaced), insert-4KiB (4,096 ' +
    'bytes spliced in), delete-4KiB (4,096 bytes cut out), byte-per-4KiB (one byte changed in every ' +
    '4 KiB block: 256 changes, so every chunk changes). One fresh Store per case: import `ref.bin` ' +
    'alone as a first LayerStack (untimed), then the whole tree (reference plus variants) as a ' +
    'second ("import"); "semantic / variant" is that import\'s bytesInserted / N, "pages / variant" ' +
    'its allocatedGrowth / N. git: commit the reference alone and `git gc` (baseline), then `git add ' +
    '-A && git commit` of the tree ("import") — git stores each variant whole (loose zlib), "git ' +
    'loose / variant" — then `git gc` ("git gc", its delta compression: "git gc\'d / variant"). ' +
    '"dedup ratio" is analyzeDedup\'s logical / unique bytes over the whole Store.',
  order: 50,
  peers: ['git'],
  tiers: (quick) => (quick ? [1, 2] : [1, 10, 100, 500]).map((n) => ({ label: `${n}`, value: n, unit: 'variants' })),
  run(tier, ctx) {
    const ref = ensureCdcRef();
    ctx.noteFixture({ name: ref.manifest.name, dir: ref.dir, reused: ref.reused, manifest: ref.manifest });
    const cases = CDC_KINDS.map((kind) => {
      const fx = useFixture(ctx, ensureCdcTree(kind, tier.value));
      warmCache(fx.dir);
      return `${kind}=${fx.dir}`;
    });
    return runWithPeers(ctx, { tier, cell: dedupTrees, args: { n: tier.value, ref: ref.dir, case: cases } }).flatMap(splitCases);
  },
  table: (rows) => dedupTable(rows, CDC_KINDS, 'variant'),
  chartDefs: dedupCharts('variant'),
};

export default family;
