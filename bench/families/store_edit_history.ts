// Family store_edit_history: what a history of small edits costs on disk. The init fixture of
// 10,000 files (1,000 quick); 100 commits (20 quick), each editing 1% of the files by a small
// overwrite, insert or delete (fixtures/edit-history.ts). layerfs commits a materialized
// Workspace; git commits a work tree with `git commit -a`, then `git gc --aggressive`.

import { countLabel, DASH, fmtBytes, fmtInt, fmtMiB, fmtMs } from '../lib/format.js';
import { ensureTree } from '../fixtures/tree.js';
import { useFixture } from '../lib/use-fixture.js';
import type { Row, Table } from '../lib/types.js';
import { failedCells, fmtX, peerOf, ratio, x, type CampaignFamily } from '../lib/campaign-table.js';
import { editHistory } from '../cells/store_edit_history.js';
import { runWithPeers } from '../lib/run-cell.js';

const family: CampaignFamily = {
  name: 'store_edit_history',
  title: 'Store size of an edit history',
  description:
    'The init fixture (10,000 files, 1,000 quick; half text, half random), then 100 rounds (20 quick), ' +
    'each editing 1% of the files with one 8–64 byte overwrite, insert or delete and committing. ' +
    'layerfs: import, fork, materialized Workspace, `commitWorkspace` per round; "stored" = Store file + ' +
    'WAL after close, "import" = the same right after the import. git: work-tree copy, `git add -A && ' +
    'git commit`, `git commit -a` per round, then `git gc --aggressive`; "stored" = `du -sb .git`. ' +
    '"stored / git" below 1× is smaller than the gc\'d repository; "history" is stored minus import. ' +
    'Then `db repack` on a fresh connection (git gc --aggressive\'s counterpart): "repack" its wall time, ' +
    '"repacked" the Store file + WAL after it, "repacked / git" that over the gc\'d repository.',
  order: 53,
  peers: ['git'],
  tiers: (quick) => [quick ? 1_000 : 10_000].map((n) => ({ label: countLabel(n), value: n, unit: 'files' })),
  run(tier, ctx) {
    const fx = useFixture(ctx, ensureTree(tier.value));
    const rounds = ctx.quick ? '20' : '100';
    const rows = runWithPeers(ctx, { tier, cell: editHistory, args: { dir: fx.dir, rounds } });
    for (const r of rows) r.bytes ??= fx.manifest.bytes;
    return rows;
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = [
      'tier', 'tool', 'rounds', 'commits', 'per commit', 'content', 'import', 'stored', 'history', 'stored / git', 'repack', 'repacked', 'repacked / git', 'git loose', 'git gc', 'objects', 'peak RSS',
    ];
    const out = rows.map((r) => {
      const bad = failedCells(r, notes, headers.length, [r.tier, r.tool]);
      if (bad) return bad;
      const isL = r.tool === 'layerfs';
      const git = isL ? peerOf(rows, r, 'git') : undefined;
      const rounds = x(r, 'rounds');
      return [
        r.tier,
        r.tool,
        fmtInt(rounds),
        fmtMs(r.ms),
        fmtMs(r.ms !== undefined && rounds ? r.ms / rounds : undefined),
        fmtBytes(r.bytes),
        isL ? fmtBytes(x(r, 'importBytes')) : DASH,
        fmtBytes(r.storeBytes),
        isL ? fmtBytes(x(r, 'historyBytes')) : DASH,
        git ? fmtX(ratio(r.storeBytes, git.storeBytes), 3) : DASH,
        isL ? fmtMs(x(r, 'repackMs')) : DASH,
        isL ? fmtBytes(x(r, 'repackedBytes')) : DASH,
        git ? fmtX(ratio(x(r, 'repackedBytes'), git.storeBytes), 3) : DASH,
        isL ? DASH : fmtBytes(x(r, 'looseBytes')),
        isL ? DASH : fmtMs(x(r, 'gcMs')),
        fmtInt(r.objects),
        fmtMiB(r.maxRssMiB),
      ];
    });
    const l = rows.find((r) => r.tool === 'layerfs' && r.status === 'ok');
    const g = l ? peerOf(rows, l, 'git') : undefined;
    if (l && g) notes.push(`at ${l.tier} files: Store / git gc --aggressive ${fmtX(ratio(l.storeBytes, g.storeBytes), 3)} (${fmtBytes(l.storeBytes)} vs ${fmtBytes(g.storeBytes)})`);
    if (l && g && x(l, 'repackedBytes') !== undefined) {
      notes.push(
        `at ${l.tier} files after \`db repack\` (${fmtMs(x(l, 'repackMs'))}): Store / git gc --aggressive ${fmtX(ratio(x(l, 'repackedBytes'), g.storeBytes), 3)} ` +
          `(${fmtBytes(x(l, 'repackedBytes'))} vs ${fmtBytes(g.storeBytes)})`,
      );
    }
    return { headers, align: headers.map((_, i) => (i === 1 ? 'l' : 'r')), rows: out, notes };
  },
};

export default family;
