// Table and charts shared by the two dedup families (dedup_cdc_locality, dedup_cross_file):
// layerfs rows from layerfs-dedup-trees, git rows from git-dedup-trees, one row per case. Not a
// family itself.

import { DASH, fmtBytes, fmtMiB, fmtMs } from './format.js';
import type { Row, Table } from './types.js';
import type { ChartDef } from '../report/charts.js';
import { failedCells, fmtMBps, fmtX, peerOf, ratio, x } from './campaign-table.js';

export function dedupTable(rows: Row[], order: readonly string[], itemName: string): Table {
  const notes: string[] = [];
  const headers = [
    'tier', 'case', 'tool', 'import', '×git', 'MB/s', `semantic / ${itemName}`, `pages / ${itemName}`,
    `git loose / ${itemName}`, `git gc'd / ${itemName}`, 'layerfs / git gc\'d', 'dedup ratio', 'git gc', 'stored', 'peak RSS',
  ];
  const ordered = [...rows].sort((p, q) => p.tierValue - q.tierValue || order.indexOf(p.cell) - order.indexOf(q.cell) || q.tool.localeCompare(p.tool));
  const out = ordered.map((r) => {
    const bad = failedCells(r, notes, headers.length, [r.tier, r.cell, r.tool]);
    if (bad) return bad;
    const isL = r.tool === 'layerfs';
    const git = isL ? peerOf(rows, r, 'git', true) : undefined;
    return [
      r.tier,
      r.cell,
      r.tool,
      fmtMs(r.ms),
      git ? fmtX(ratio(r.ms, git.ms)) : DASH,
      isL ? fmtMBps(x(r, 'MBps')) : DASH,
      isL ? fmtBytes(x(r, 'semanticPerItem')) : DASH,
      isL ? fmtBytes(x(r, 'allocatedPerItem')) : DASH,
      isL ? DASH : fmtBytes(x(r, 'loosePerItem')),
      isL ? DASH : fmtBytes(x(r, 'packedPerItem')),
      git ? fmtX(ratio(x(r, 'semanticPerItem'), x(git, 'packedPerItem'))) : DASH,
      isL ? fmtX(x(r, 'dedupRatio')) : DASH,
      isL ? DASH : fmtMs(x(r, 'gcMs')),
      fmtBytes(r.storeBytes),
      fmtMiB(r.maxRssMiB),
    ];
  });
  return { headers, align: headers.map((_, i) => (i === 1 || i === 2 ? 'l' : 'r')), rows: out, notes };
}

export function dedupCharts(itemName: string): ChartDef[] {
  return [
    {
      stem: 'per-item',
      title: `New bytes per ${itemName}`,
      y: `bytes per ${itemName}`,
      values: (r) =>
        r.tool === 'layerfs'
          ? [{ series: `layerfs ${r.cell}`, y: x(r, 'semanticPerItem') }]
          : [{ series: `git gc'd ${r.cell}`, y: x(r, 'packedPerItem') }],
    },
    { stem: 'time', title: 'Import / git add + commit: wall time', y: 'ms', value: (r) => r.ms, series: (r) => `${r.tool} ${r.cell}` },
  ];
}
