// Family real_tree_releases: two successive releases of a real dependency tree (bench/fixtures/
// real-tree.ts: ~84,000 files, ~1 GB of published npm code) through layerfs in both projections
// and through git, cp, rm and tar, in the same run. Full runs only: the fixture comes from the npm
// registry (cached outside the repository) and one run takes minutes.

import { DASH, fmtBytes, fmtMs } from '../lib/format.js';
import { ensureRealTree } from '../fixtures/real-tree.js';
import { warmCache } from '../lib/warm.js';
import type { Row, Table } from '../lib/types.js';
import { failedCells, fmtX, x, type CampaignFamily } from '../lib/campaign-table.js';
import { useFixture } from '../lib/use-fixture.js';
import { realTree } from '../cells/real_tree_releases.js';

const ratio = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined || b === undefined || b === 0 ? undefined : a / b);

const family: CampaignFamily = {
  name: 'real_tree_releases',
  title: 'Two releases of a real tree: import, Workspace, commit of the change, export, end, storage',
  description:
    'Release A and release B of one web project\'s dependencies (package-lock.json files in bench/fixtures/real-tree/, ' +
    'installed with `npm ci --ignore-scripts`: ~84,000 files, ~1 GB each, 15 packages changed version between them). ' +
    'layerfs, per projection: import A (`initLayerStack`), create a Workspace of A, `rsync -a --delete B/ ws/`, ' +
    'commit ("commit B"), export the result and end the Workspace; then, materialize only, a fresh import of B alone ' +
    'and `db repack` of the two-release Store. git: `cp -a A`, `git add -A && git commit` of A, the same rsync, ' +
    '`git add -A && git commit` ("commit B"), `git gc`, `git gc --aggressive`, `rm -rf` of the work tree; `tar c` of A ' +
    'to /dev/null is the read floor. "stored" is the Store (file + WAL) after both releases as written, against ' +
    '.git after `git gc`; "repacked" after `db repack`, against .git after `git gc --aggressive`.',
  order: 95,
  peers: ['git'],
  charts: false,
  tiers: (quick) => (quick ? [] : [{ label: 'A→B', value: 2, unit: 'releases' }]),
  run(tier, ctx) {
    const fa = useFixture(ctx, ensureRealTree('a', ctx.log));
    const fb = useFixture(ctx, ensureRealTree('b', ctx.log));
    const args = { a: fa.dir, b: fb.dir };
    const rows: Row[] = [];
    for (const projection of ['materialize', 'fuse']) {
      warmCache(fa.dir);
      warmCache(fb.dir);
      rows.push(ctx.runCell({ tier, tool: `layerfs-${projection}`, cell: realTree, args: { ...args, projection }, scratch: true }));
    }
    warmCache(fa.dir);
    warmCache(fb.dir);
    rows.push(ctx.runCell({ tier, cell: realTree.peers[0]!, args, scratch: true }));
    for (const r of rows) r.files ??= fb.manifest.files;
    return rows;
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const git = rows.find((r) => r.tool === 'git' && r.status === 'ok');
    const headers = ['tool', 'import A', 'create', '×cp -a', 'commit B', '×git', '×import B', 'export', '×cp -a', 'end', '×rm -rf', 'stored', '×gc\'d', 'repacked', '×aggr.', 'repack', '×aggr.', 'peak RSS'];
    const out = rows.map((r) => {
      const bad = failedCells(r, notes, headers.length, [r.tool]);
      if (bad) return bad;
      if (r.tool === 'git') {
        return [
          'git (cp, rm, gc)', fmtMs(x(r, 'importMs')), fmtMs(x(r, 'cpMs')), DASH, fmtMs(x(r, 'commitMs')), DASH, DASH, fmtMs(x(r, 'cpMs')), DASH, fmtMs(x(r, 'rmMs')), DASH,
          fmtBytes(x(r, 'gcBytes')), DASH, fmtBytes(x(r, 'aggressiveBytes')), DASH, `gc ${fmtMs(x(r, 'gcMs'))}, aggr. ${fmtMs(x(r, 'aggressiveMs'))}`, DASH, r.maxRssMiB ? `${r.maxRssMiB.toFixed(0)} MiB` : DASH,
        ];
      }
      return [
        r.tool,
        fmtMs(x(r, 'importMs')),
        fmtMs(x(r, 'createMs')),
        fmtX(ratio(x(r, 'createMs'), x(git, 'cpMs'))),
        fmtMs(x(r, 'commitMs')),
        fmtX(ratio(x(r, 'commitMs'), x(git, 'commitMs'))),
        fmtX(ratio(x(r, 'commitMs'), x(r, 'importBMs'))),
        fmtMs(x(r, 'exportMs')),
        fmtX(ratio(x(r, 'exportMs'), x(git, 'cpMs'))),
        fmtMs(x(r, 'endMs')),
        fmtX(ratio(x(r, 'endMs'), x(git, 'rmMs'))),
        fmtBytes(r.storeBytes),
        fmtX(ratio(r.storeBytes, x(git, 'gcBytes')), 3),
        fmtBytes(x(r, 'repackedBytes')),
        fmtX(ratio(x(r, 'repackedBytes'), x(git, 'aggressiveBytes')), 3),
        fmtMs(x(r, 'repackMs')),
        fmtX(ratio(x(r, 'repackMs'), x(git, 'aggressiveMs'))),
        r.maxRssMiB ? `${r.maxRssMiB.toFixed(0)} MiB` : DASH,
      ];
    });
    notes.push('×cp -a: create and export against `cp -a` of A; ×git: commit B against git add+commit of B; ×import B: against a fresh import of B alone; ×rm -rf: end against `rm -rf`; ×gc\'d: stored against .git after `git gc`; ×aggr.: repacked (and repack time) against `git gc --aggressive`.');
    return { headers, align: headers.map((_, i) => (i === 0 ? 'l' : 'r')), rows: out, notes };
  },
};

export default family;
