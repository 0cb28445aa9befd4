// The two edit families (edit_length_preserving, edit_length_changing) differ only in their ops:
// both edit one large random file by 4 KiB in a materialized Workspace and commit after each
// edit, against git committing the same edits. Not a family itself.

import { DASH, fmtBytes, fmtMiB, fmtMs } from './format.js';
import { warmCache } from './warm.js';
import { ensureLargeFile } from '../fixtures/tree.js';
import type { Row, Table } from './types.js';
import { failedCells, fmtSigned, fmtX, peerOf, ratio, splitCases, x, type CampaignFamily } from './campaign-table.js';
import { useFixture } from './use-fixture.js';
import type { Cell } from './define-cell.js';
import type { FILE_EDIT_OPTIONS } from './file-edits-cell.js';
import { runWithPeers } from './run-cell.js';

export interface EditFamilySpec {
  name: string;
  /** The family's binding of lib/file-edits-cell.ts (its own cell file). */
  cell: Cell<typeof FILE_EDIT_OPTIONS>;
  title: string;
  order: number;
  ops: readonly string[];
  opsText: string;
}

/** One ok row of the table; the Store columns are layerfs's, the .git one git's. */
function editRow(rows: Row[], r: Row): string[] {
  const isL = r.tool === 'layerfs';
  const git = isL ? peerOf(rows, r, 'git', true) : undefined;
  const semantic = x(r, 'semanticGrowth');
  return [
    r.tier,
    r.cell,
    r.tool,
    fmtMs(r.ms),
    git ? fmtX(ratio(r.ms, git.ms)) : DASH,
    r.bytes !== undefined && r.ms ? `${(r.bytes / 1e6 / (r.ms / 1000)).toFixed(0)}` : DASH,
    isL ? fmtBytes(semantic) : DASH,
    isL ? fmtSigned(x(r, 'allocatedGrowth')) : DASH,
    isL ? DASH : fmtSigned(x(r, 'fileGrowth')),
    isL ? `${x(r, 'objectsInserted') ?? DASH} / ${x(r, 'objectsReused') ?? DASH}` : DASH,
    isL && semantic !== undefined && r.bytes ? `${((semantic / r.bytes) * 100).toPrecision(2)} %` : DASH,
    fmtMs(x(r, 'initMs')),
    isL ? fmtMs(x(r, 'materializeMs')) : DASH,
    fmtMiB(r.maxRssMiB),
    isL ? fmtMiB(x(r, 'rssBeforeCommitsMiB')) : DASH,
  ];
}

/** The figure the families exist for, at the largest tier: the worst Store growth of one 4 KiB
 * edit (layerfs) against the best .git growth of one commit (git). */
function worstGrowthNote(rows: Row[]): string | undefined {
  const big = rows.filter((r) => r.tool === 'layerfs' && r.status === 'ok').sort((p, q) => q.tierValue - p.tierValue)[0];
  if (!big) return undefined;
  const at = rows.filter((r) => r.tool === 'layerfs' && r.status === 'ok' && r.tier === big.tier);
  const worst = Math.max(...at.map((r) => x(r, 'semanticGrowth') ?? 0));
  const gitAt = rows.filter((r) => r.tool === 'git' && r.status === 'ok' && r.tier === big.tier);
  const gitWorst = gitAt.length ? Math.min(...gitAt.map((r) => x(r, 'fileGrowth') ?? Infinity)) : undefined;
  return (
    `at ${big.tier}: largest semantic growth of one 4 KiB edit ${fmtBytes(worst)} (goal: a few 16 KiB chunks, not the file)` +
    (gitWorst !== undefined ? `; smallest .git growth of one git commit ${fmtBytes(gitWorst)}` : '')
  );
}

export function editFamily(spec: EditFamilySpec): CampaignFamily {
  return {
    name: spec.name,
    title: spec.title,
    description:
      `One file of seeded random bytes, 1 / 10 / 100 / 500 MiB (1 and 2 in quick runs). layerfs: ` +
      'import it (`initLayerStack`, "init"), fork a Branch, `createWorkspace` (materialized: the file is ' +
      'written out, "materialize"), close and reconnect, one no-op `commitWorkspace` (warm-up), then ' +
      `for each op in turn — ${spec.opsText} — edit the Workspace file in place (same inode; the ` +
      'edit itself is untimed) and `commitWorkspace` ("commit"). Every op edits the original file: ' +
      'before each op but the first the file is restored to the fixture\'s bytes and that restore is ' +
      'committed (untimed). After each commit the Branch\'s file is streamed back and ' +
      'compared with the Workspace file. "semantic" is the receipt\'s bytesInserted (new chunks plus ' +
      'extent-tree and namespace records), "pages" its allocatedGrowth; the goal is a few chunks ' +
      '(chunks average 16 KiB), whatever the file size. git: the fixture copied, `git add -A && git ' +
      'commit` (untimed), then the same edits and restores (same bytes, same mtimes) and `git commit -a -q -m x` ' +
      'timed as a process; ".git Δ" is `du -sb .git` after minus before (git writes the whole new file ' +
      'as a loose zlib object; only a later `git gc` would delta it). "×git" is commit time over ' +
      'git\'s, same op and tier. "peak RSS" is the cell process\'s after all commits, "RSS before ' +
      'commits" its peak after import and materialize (the difference is what the commits needed).',
    order: spec.order,
    peers: ['git'],
    tiers: (quick) => (quick ? [1, 2] : [1, 10, 100, 500]).map((mib) => ({ label: `${mib} MiB`, value: mib, unit: 'MiB' })),
    run(tier, ctx) {
      const fx = useFixture(ctx, ensureLargeFile(tier.value));
      const args = { dir: fx.dir, ops: spec.ops.join(',') };
      return runWithPeers(ctx, { tier, cell: spec.cell, args }, () => warmCache(fx.dir)).flatMap(splitCases);
    },
    table(rows: Row[]): Table {
      const notes: string[] = [];
      const headers = [
        'tier', 'op', 'tool', 'commit', '×git', 'MB/s of file', 'semantic', 'pages', '.git Δ', 'objects new / reused',
        'semantic / file', 'init', 'materialize', 'peak RSS', 'RSS before commits',
      ];
      const ordered = [...rows].sort((p, q) => p.tierValue - q.tierValue || spec.ops.indexOf(p.cell) - spec.ops.indexOf(q.cell) || p.tool.localeCompare(q.tool));
      const out = ordered.map((r) => failedCells(r, notes, headers.length, [r.tier, r.cell, r.tool]) ?? editRow(rows, r));
      const note = worstGrowthNote(rows);
      if (note) notes.push(note);
      return { headers, align: headers.map((_, i) => (i === 1 || i === 2 ? 'l' : 'r')), rows: out, notes };
    },
    chartDefs: [
      {
        stem: 'semantic',
        title: 'Store growth per 4 KiB edit',
        y: 'bytes (layerfs semantic, git .git Δ)',
        values: (r) =>
          r.tool === 'layerfs' ? [{ series: `layerfs ${r.cell}`, y: x(r, 'semanticGrowth') }] : [{ series: 'git (median of ops)', y: x(r, 'fileGrowth') }],
        median: true,
      },
      {
        stem: 'commit',
        title: 'Commit of a 4 KiB edit: wall time',
        y: 'ms',
        values: (r) => [{ series: r.tool === 'layerfs' ? `layerfs ${r.cell}` : 'git (median of ops)', y: r.ms }],
        median: true,
      },
    ],
  };
}
