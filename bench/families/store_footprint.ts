// Family store_footprint: the on-disk cost of 100,000 unique small files (10,000 quick; the init
// fixture): Store bytes against the canonical bytes it holds, and against a git repository of
// the same tree after `git gc`.

import { countLabel, DASH, fmtBytes, fmtInt, fmtMiB, fmtMs } from '../lib/format.js';
import { warmCache } from '../lib/warm.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Row, Table } from '../lib/types.js';
import { failedCells, fmtX, peerOf, ratio, x, type CampaignFamily } from '../lib/campaign-table.js';
import { useFixture } from '../lib/use-fixture.js';
import { footprint } from '../cells/store_footprint.js';
import { gitInitCell } from '../cells/store_footprint.js';

const family: CampaignFamily = {
  name: 'store_footprint',
  title: 'Store footprint of unique small files',
  description:
    'The init fixture (N unique files, half text / half random, log-normal sizes, median 2 KiB): ' +
    '100,000 files, 1,000 in quick runs. layerfs: `Client.create` + `initLayerStack` ("import"), ' +
    'close (WAL checkpointed), then "stored" = Store file + WAL and `analyzeDedup` ("analyze"): ' +
    '"content" is the files\' bytes (logical), "canonical" the unique canonical bytes of every object ' +
    'the state reaches (chunks and blobs plus namespace and extent records). git: `git init && git add ' +
    '-A && git commit` ("import"; loose objects, "git loose" = `du -sb .git`), then `git gc` ("git ' +
    'gc"; "git gc\'d" = `du -sb .git` after). Ratios: "stored / content", "stored / canonical" (page ' +
    'and index overhead of SQLite), and "stored / git gc\'d" (below 1× is smaller than a packed git ' +
    'repository; git\'s packs are zlib-compressed and delta-encoded, the Store\'s zstd-compressed, ' +
    'docs/FORMAT.md). "layerfs-raw" is the same cell with LAYERFS_COMPRESS=0 (the uncompressed Store), run ' +
    'just before: "import ×raw" is import time over its import time, "reads ×raw" the CPU time of 2,000 ' +
    'seeded `cat`s of files ≤ 64 KiB on a fresh connection over its (CPU time: steadier than wall time on a ' +
    'loaded machine). Then `db repack` on a fresh connection (layerfs only, not the raw baseline): "repack" ' +
    'its wall time, "repacked" the Store file + WAL after it, and its ratios to canonical and to git gc\'d.',
  order: 52,
  peers: ['git'],
  tiers: (quick) => [quick ? 1_000 : 100_000].map((n) => ({ label: countLabel(n), value: n, unit: 'files' })),
  run(tier, ctx) {
    const fx = useFixture(ctx, ensureTree(tier.value));
    warmCache(fx.dir);
    const raw = ctx.runCell({ tier, tool: 'layerfs-raw', cell: footprint, args: { dir: fx.dir, raw: true } });
    warmCache(fx.dir);
    const l = ctx.runCell({ tier, cell: footprint, args: { dir: fx.dir } });
    warmCache(fx.dir);
    const g = ctx.runCell({ tier, cell: gitInitCell, args: { dir: fx.dir, gc: true } });
    for (const r of [raw, l, g]) {
      r.files ??= fx.manifest.files;
      r.bytes ??= fx.manifest.bytes;
    }
    return [raw, l, g];
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = [
      'tier', 'tool', 'import', '×git', 'content', 'canonical', 'stored', 'allocated', 'stored / content', 'stored / canonical',
      'git loose', 'git gc\'d', 'stored / git gc\'d', 'repack', 'repacked', 'repacked / canonical', 'repacked / git gc\'d', 'git gc', 'analyze', 'import ×raw', 'reads CPU', 'reads ×raw', 'objects', 'peak RSS',
    ];
    const out = rows.map((r) => {
      const bad = failedCells(r, notes, headers.length, [r.tier, r.tool]);
      if (bad) return bad;
      const isL = r.tool === 'layerfs' || r.tool === 'layerfs-raw';
      const git = isL ? peerOf(rows, r, 'git') : undefined;
      const raw = r.tool === 'layerfs' ? peerOf(rows, r, 'layerfs-raw') : undefined;
      const packed = isL ? x(git, 'packedBytes') : x(r, 'packedBytes');
      return [
        r.tier,
        r.tool,
        fmtMs(r.ms),
        git ? fmtX(ratio(r.ms, git.ms)) : DASH,
        fmtBytes(r.bytes),
        isL ? fmtBytes(x(r, 'uniqueBytes')) : DASH,
        isL ? fmtBytes(r.storeBytes) : DASH,
        fmtBytes(x(r, 'allocatedBytes')),
        isL ? fmtX(ratio(r.storeBytes, r.bytes), 3) : fmtX(ratio(packed, r.bytes), 3),
        isL ? fmtX(ratio(r.storeBytes, x(r, 'uniqueBytes')), 3) : DASH,
        isL ? DASH : fmtBytes(r.storeBytes),
        isL ? fmtBytes(packed) : fmtBytes(packed),
        isL ? fmtX(ratio(r.storeBytes, packed), 3) : DASH,
        isL ? fmtMs(x(r, 'repackMs')) : DASH,
        isL ? fmtBytes(x(r, 'repackedBytes')) : DASH,
        isL ? fmtX(ratio(x(r, 'repackedBytes'), x(r, 'uniqueBytes')), 3) : DASH,
        isL ? fmtX(ratio(x(r, 'repackedBytes'), packed), 3) : DASH,
        isL ? DASH : fmtMs(x(r, 'gcMs')),
        isL ? fmtMs(x(r, 'analyzeMs')) : DASH,
        raw ? fmtX(ratio(r.ms, raw.ms), 3) : DASH,
        isL ? fmtMs(x(r, 'readCpuMs')) : DASH,
        raw ? fmtX(ratio(x(r, 'readCpuMs'), x(raw, 'readCpuMs')), 3) : DASH,
        fmtInt(r.objects),
        fmtMiB(r.maxRssMiB),
      ];
    });
    const l = rows.find((r) => r.tool === 'layerfs' && r.status === 'ok');
    const g = l ? peerOf(rows, l, 'git') : undefined;
    if (l) {
      const raw = peerOf(rows, l, 'layerfs-raw');
      notes.push(
        `at ${l.tier} files: Store / canonical ${fmtX(ratio(l.storeBytes, x(l, 'uniqueBytes')), 3)}, Store / git gc'd ${fmtX(ratio(l.storeBytes, x(g, 'packedBytes')), 3)}, ` +
          `import ×raw ${fmtX(ratio(l.ms, raw?.ms), 3)}, small reads ×raw ${fmtX(ratio(x(l, 'readCpuMs'), x(raw, 'readCpuMs')), 3)} (CPU) ` +
          '(for git, "stored / content" is its gc\'d repository over the content)',
      );
      if (x(l, 'repackedBytes') !== undefined) {
        notes.push(
          `at ${l.tier} files after \`db repack\` (${fmtMs(x(l, 'repackMs'))}): Store ${fmtBytes(x(l, 'repackedBytes'))}, / canonical ${fmtX(ratio(x(l, 'repackedBytes'), x(l, 'uniqueBytes')), 3)}, ` +
            `/ git gc'd ${fmtX(ratio(x(l, 'repackedBytes'), x(g, 'packedBytes')), 3)}`,
        );
      }
    }
    return { headers, align: headers.map((_, i) => (i === 1 ? 'l' : 'r')), rows: out, notes };
  },
  chartDefs: [
    {
      stem: 'bytes',
      title: 'On-disk bytes of the tree',
      y: 'bytes',
      values: (r) =>
        r.tool === 'layerfs'
          ? [
              { series: 'content (logical)', y: r.bytes },
              { series: 'layerfs canonical', y: x(r, 'uniqueBytes') },
              { series: 'layerfs Store file', y: r.storeBytes },
            ]
          : [
              { series: 'git loose (.git)', y: r.storeBytes },
              { series: "git gc'd (.git)", y: x(r, 'packedBytes') },
            ],
    },
  ],
};

export default family;
