// Family dedup_cross_file: N files of 1 MiB (N = 10, 100; 4 quick) that are all identical, all
// unique, half identical (mixed), or share their first half: whole-file and chunk-level dedup
// across files, against git (which dedups identical blobs, and deltas only at gc).

import { warmCache } from '../lib/warm.js';
import { ensureCrossFileTree, XFILE_CASES } from '../fixtures/dedup.js';
import { splitCases, type CampaignFamily } from '../lib/campaign-table.js';
import { dedupCharts, dedupTable } from '../lib/dedup-table.js';
import { useFixture } from '../lib/use-fixture.js';
import { dedupCrossFile } from '../cells/dedup_cross_file.js';
import { runWithPeers } from '../lib/run-cell.js';

const family: CampaignFamily = {
  name: 'dedup_cross_file',
  title: 'Cross-file dedup: N files of 1 MiB',
  description:
    'Fixture: N files of 1 MiB of seeded random bytes: identical (N copies of one file), unique (N ' +
    'different files), mixed (even-numbered files are copies of one file, odd ones unique), ' +
    'shared-half (every file has the same first 512 KiB and its own last 512 KiB). One fresh Store ' +
    'per case: `initLayerStack` of the tree ("import"); "semantic / file" is the receipt\'s ' +
    'bytesInserted / N (ideal: 1 MiB / N for identical, 1 MiB for unique, ≈ ½ MiB for mixed and ' +
    'shared-half), "pages / file" its allocatedGrowth / N. git: `git add -A && git commit` ' +
    '("import"; "git loose / file" is the .git growth / N), then `git gc` ("git gc\'d / file"). ' +
    '"dedup ratio" is analyzeDedup\'s logical / unique bytes.',
  order: 51,
  peers: ['git'],
  tiers: (quick) => (quick ? [4] : [10, 100]).map((n) => ({ label: `${n}`, value: n, unit: 'files' })),
  run(tier, ctx) {
    const cases: string[] = [];
    for (const c of XFILE_CASES) {
      const fx = useFixture(ctx, ensureCrossFileTree(c, tier.value));
      warmCache(fx.dir);
      cases.push(`${c}=${fx.dir}`);
    }
    return runWithPeers(ctx, { tier, cell: dedupCrossFile, args: { n: tier.value, case: cases } }).flatMap(splitCases);
  },
  table: (rows) => dedupTable(rows, XFILE_CASES, 'file'),
  chartDefs: dedupCharts('file'),
};

export default family;
