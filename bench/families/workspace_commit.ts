// Family workspace_commit: a small change (10 files) committed from a Workspace of an N-file
// tree, against `git commit -a` on a copy of the same tree with the same edits. Reports the
// commit time, its ratio to the import of the whole tree (goal ≤ 0.05 at 100,000 files), and how
// much the Store grows beyond the bytes of the edited files (goal ≤ 64 KiB).

import { countLabel, DASH, fmtBytes, fmtMiB, fmtMs, fmtRatio } from '../lib/format.js';
import { firstLine } from '../lib/table.js';
import { warmCache } from '../lib/warm.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Family, Row, Table } from '../lib/types.js';
import { useFixture } from '../lib/use-fixture.js';
import { workspaceCommit } from '../cells/workspace_commit.js';
import { runWithPeers } from '../lib/run-cell.js';

const EDITS = { edits: 10, editBytes: 64, mode: 'mixed', seed: 1 } as const;
const GOAL_RATIO = 0.05;
const GOAL_BEYOND = 64 * 1024;
/** The tier the goals are stated for. */
const GOAL_TIER = 100_000;

function num(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}

/** Signed byte counts (growth minus changed bytes can be negative). */
function fmtSigned(b: number | undefined): string {
  if (b === undefined) return DASH;
  return b < 0 ? `−${fmtBytes(-b)}` : fmtBytes(b);
}

const family: Family = {
  name: 'workspace_commit',
  title: 'Commit a small change from a Workspace',
  description:
    'One cell per tool and tier. layerfs: import the tree (`initLayerStack`, "init"), fork a Branch, ' +
    '`createWorkspace` ("materialize"), close and reconnect (checkpoints the WAL), a no-op ' +
    '`commitWorkspace` of the unedited Workspace (UpToDate; "no-op": finding changes alone, and ' +
    'warms the connection), edit 10 files (`editSet` k=10, 64-byte mixed overwrite/insert/append ' +
    'edits, seed 1), then `commitWorkspace` ("commit"). git: copy the tree, `git init && git add -A ' +
    '&& git commit` ("init", untimed setup, GIT_DIR outside the tree), the same edits, then ' +
    '`git commit -a -q -m x` ("commit", timed as a process). "commit/init" is the commit over the ' +
    `import of the whole tree (goal ≤ ${GOAL_RATIO} at 100,000 files). "changed" is the full size of ` +
    'the 10 edited files; "semantic" the receipt\'s bytesInserted (new objects: chunks and ' +
    'namespace records); "pages" the receipt\'s allocatedGrowth (SQLite pages in use); "disk Δ" for ' +
    'layerfs is Store file + WAL after the final close minus after the close before the commit (both ' +
    'checkpointed), for git `du -sb .git` after minus before (loose objects + rewritten index). ' +
    `"pages − changed" has the goal ≤ ${GOAL_BEYOND / 1024} KiB.`,
  order: 31,
  peers: ['git'],
  tiers: (quick) =>
    (quick ? [100, 300] : [1_000, 10_000, 100_000]).map((n) => ({ label: countLabel(n), value: n, unit: 'files' })),
  run(tier, ctx) {
    const fx = useFixture(ctx, ensureTree(tier.value));
    const args = { dir: fx.dir, files: tier.value, edits: EDITS.edits, 'edit-bytes': EDITS.editBytes, 'edit-mode': EDITS.mode, seed: EDITS.seed };
    const rows = runWithPeers(ctx, { tier, cell: workspaceCommit, args }, () => warmCache(fx.dir));
    for (const row of rows) row.bytes ??= fx.manifest.bytes;
    return rows;
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = ['tier', 'tool', 'commit', '×git', 'no-op', 'init', 'materialize', 'commit/init', 'changed', 'semantic', 'pages', 'disk Δ', 'semantic − changed', 'pages − changed', 'disk Δ − changed', 'peak RSS'];
    const out = rows.map((r) => {
      if (r.status !== 'ok') {
        notes.push(`${r.tool} @ ${r.tier}: ${r.status}: ${firstLine(r.message)}`);
        return [r.tier, r.tool, `${r.status} [${notes.length}]`, ...Array<string>(headers.length - 3).fill(DASH)];
      }
      const x = r.extra;
      const git = rows.find((q) => q.tool === 'git' && q.tier === r.tier && q.status === 'ok');
      const changed = num(x.changedBytes);
      const minus = (v: number | undefined) => (v !== undefined && changed !== undefined ? v - changed : undefined);
      const isLayerfs = r.tool === 'layerfs';
      const ratio = isLayerfs ? num(x.commitPerInit) : r.ms !== undefined && num(x.initMs) ? r.ms / num(x.initMs)! : undefined;
      return [
        r.tier,
        r.tool,
        fmtMs(r.ms),
        r.tool === 'git' ? DASH : fmtRatio(r.ms !== undefined && git?.ms ? r.ms / git.ms : undefined),
        isLayerfs ? fmtMs(num(x.noopCommitMs)) : DASH,
        fmtMs(num(x.initMs)),
        isLayerfs ? fmtMs(num(x.materializeMs)) : DASH,
        ratio === undefined ? DASH : ratio.toFixed(4),
        fmtBytes(changed),
        isLayerfs ? fmtBytes(num(x.bytesInserted)) : DASH,
        isLayerfs ? fmtSigned(num(x.allocatedGrowth)) : DASH,
        fmtSigned(num(x.fileGrowth)),
        isLayerfs ? fmtSigned(minus(num(x.bytesInserted))) : DASH,
        isLayerfs ? fmtSigned(minus(num(x.allocatedGrowth))) : DASH,
        fmtSigned(minus(num(x.fileGrowth))),
        fmtMiB(r.maxRssMiB),
      ];
    });
    const big = rows.filter((r) => r.tool === 'layerfs' && r.status === 'ok').sort((p, q) => q.tierValue - p.tierValue)[0];
    // The goals are stated for 100,000 files: a smaller largest tier (quick runs) cannot judge them.
    if (big && big.tierValue < GOAL_TIER) {
      notes.push(`goals (commit/init ≤ ${GOAL_RATIO}, pages − changed ≤ ${GOAL_BEYOND / 1024} KiB) are judged at ${GOAL_TIER.toLocaleString('en-US')} files; this run's largest tier is ${big.tier}.`);
    } else if (big) {
      const ratio = num(big.extra.commitPerInit);
      const beyond = num(big.extra.allocatedBeyondChanged);
      notes.push(
        `goals at ${big.tier} files: commit/init ${ratio?.toFixed(4) ?? DASH} (≤ ${GOAL_RATIO}: ${ratio !== undefined && ratio <= GOAL_RATIO ? 'met' : 'NOT met'}); ` +
          `pages − changed ${fmtSigned(beyond)} (≤ ${GOAL_BEYOND / 1024} KiB: ${beyond !== undefined && beyond <= GOAL_BEYOND ? 'met' : 'NOT met'})`,
      );
    }
    return { headers, align: headers.map((_, i) => (i === 1 ? 'l' : 'r')), rows: out, notes };
  },
};

export default family;
