// Family multi_workspace_development: 2 and 4 Workspaces on their own Branches, developed at the
// same time by separate processes, 100 commits each (5 quick), against git worktrees doing the
// same. Do commits of concurrent agents stay fast, and does the Store grow by what changed?

import { DASH, fmtBytes, fmtMiB, fmtMs, fmtRate } from '../lib/format.js';
import { warmCache } from '../lib/warm.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Row, Table } from '../lib/types.js';
import { failedCells, fmtSigned, fmtX, peerOf, ratio, x, type CampaignFamily } from '../lib/campaign-table.js';
import { useFixture } from '../lib/use-fixture.js';
import { multiWorkspace } from '../cells/multi_workspace_development.js';
import { runWithPeers } from '../lib/run-cell.js';

const FILES = 1_000;
/** Quick runs use the 100-file tree: setup (materializing every Workspace, git add) dominates them. */
const QUICK_FILES = 100;

const family: CampaignFamily = {
  name: 'multi_workspace_development',
  title: 'Concurrent Workspaces in separate processes',
  description:
    `The init fixture of ${FILES.toLocaleString('en-US')} files (${QUICK_FILES} in quick runs). layerfs, setup (untimed): import it, fork one Branch ` +
    'per worker from the genesis Layer, one materialized Workspace each, close. Then one worker ' +
    'process per Workspace: it connects, makes one no-op commit (warm-up) and reports ready; when ' +
    'all are ready they are started together and each makes 100 commits (5 in quick runs), each ' +
    'editing 10 files (64-byte mixed edits, seeded per worker and commit) then `commitWorkspace`. A ' +
    'failed commit is retried up to 5 times ("retries"). "wall" runs from the start signal to the ' +
    'last worker\'s end; "commits/s" is all commits over the wall time; "median" / "p90" are single ' +
    'commitWorkspace calls across workers. git: one repository, one `git worktree add -b` per ' +
    'worker, the same workers and edits with `git commit -a` (each timed as one process). ' +
    '"semantic" and "pages" are the summed receipts (pages of concurrent receipts overlap: each ' +
    'measures from its own baseline, which may include another process\'s writes, so their sum can ' +
    'exceed the real growth); "file / .git Δ" is Store file + WAL after close minus before, or ' +
    '`du -sb .git`; "changed" the full size of every edited file, summed.',
  order: 61,
  peers: ['git'],
  tiers: () => [2, 4].map((n) => ({ label: `${n}`, value: n, unit: 'workspaces' })),
  run(tier, ctx) {
    const files = ctx.quick ? QUICK_FILES : FILES;
    const fx = useFixture(ctx, ensureTree(files));
    const args = { dir: fx.dir, files, workers: tier.value, commits: ctx.quick ? 5 : 100 };
    return runWithPeers(ctx, { tier, cell: multiWorkspace, args }, () => warmCache(fx.dir));
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = [
      'workspaces', 'tool', 'commits', 'wall', '×git', 'commits/s', 'median', 'p90', 'max', 'retries',
      'changed', 'semantic', 'pages', 'file / .git Δ', 'peak RSS (worker)',
    ];
    const out = rows.map((r) => {
      const bad = failedCells(r, notes, headers.length, [r.tier, r.tool]);
      if (bad) return bad;
      const isL = r.tool === 'layerfs';
      const git = isL ? peerOf(rows, r, 'git') : undefined;
      const checks = r.extra.checks !== null && typeof r.extra.checks === 'object' ? (r.extra.checks as Record<string, unknown>) : {};
      for (const [k, v] of Object.entries(checks)) if (!String(v).startsWith('ok')) notes.push(`${r.tool} @ ${r.tier}: check ${k}: ${String(v)}`);
      const errs = Array.isArray(r.extra.errors) ? (r.extra.errors as string[]) : [];
      if (errs.length) notes.push(`${r.tool} @ ${r.tier}: retried errors, e.g. ${errs[0]}`);
      return [
        r.tier,
        r.tool,
        String(x(r, 'commits') ?? DASH),
        fmtMs(r.ms),
        git ? fmtX(ratio(r.ms, git.ms)) : DASH,
        fmtRate(x(r, 'commitsPerS')),
        fmtMs(x(r, 'medianCommitMs')),
        fmtMs(x(r, 'p90CommitMs')),
        fmtMs(x(r, 'maxCommitMs')),
        String(x(r, 'retries') ?? DASH),
        fmtBytes(x(r, 'changedBytes')),
        isL ? fmtBytes(x(r, 'semanticGrowth')) : DASH,
        isL ? fmtSigned(x(r, 'allocatedGrowth')) : DASH,
        fmtSigned(x(r, 'fileGrowth')),
        // git workers are Node processes spawning git; their RSS is not git's.
        isL ? fmtMiB(r.maxRssMiB) : DASH,
      ];
    });
    return { headers, align: headers.map((_, i) => (i === 1 ? 'l' : 'r')), rows: out, notes };
  },
  chartDefs: [
    { stem: 'throughput', title: 'Commits per second, all workers', y: 'commits/s', value: (r) => x(r, 'commitsPerS'), legend: 'tool' },
    { stem: 'latency', title: 'Median commit under concurrency', y: 'ms', value: (r) => x(r, 'medianCommitMs'), legend: 'tool' },
  ],
};

export default family;
