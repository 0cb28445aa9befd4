// Family shared_branch: many agents, one Branch. 8 processes × 50 commits (4 × 10 quick) on ONE
// Branch through their own Workspaces (reconciling commits), against git clones pushing to one
// bare repository with pull --rebase and retries; then a reconciling commit's cost against a
// plain one on a large tree, with the head 10 Commits ahead.

import { DASH, fmtMs, fmtRate } from '../lib/format.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Row, Table } from '../lib/types.js';
import { failedCells, fmtX, ratio, x, type CampaignFamily } from '../lib/campaign-table.js';
import { useFixture } from '../lib/use-fixture.js';
import { reconcileCost, sharedBranch } from '../cells/shared_branch.js';
import { runWithPeers } from '../lib/run-cell.js';

const CASES = [
  { name: 'own files', args: { share: 0 } },
  { name: '10% shared, disjoint lines', args: { share: 0.1 } },
  { name: '10% shared, same line', args: { share: 0.1, overlap: true } },
];

const family: CampaignFamily = {
  name: 'shared_branch',
  title: 'Many agents, one Branch: reconciling commits',
  description:
    'Tier "8 × 50" (quick "4 × 10"): that many worker processes, each with its own materialized Workspace of ONE Branch ' +
    '(a 100-file tree plus a shared text file of 60 lines per worker), start together and each make that many commits. ' +
    'Every commit writes one file of the worker\'s own; in the "shared" cases 10 % also edit one line of the shared ' +
    'file: a line of the worker\'s own range ("disjoint"), or line 1 for everyone ("same line"). layerfs: ' +
    '`commitWorkspace` (reconciling when the head moved; a Conflicted one resolves the overlap to the head\'s version ' +
    'and commits again: "conflicted"). git: one clone per worker of one bare repository; `git add -A && git commit`, ' +
    'then `git push`, and on rejection `git pull --rebase` (an overlapping line taken from upstream) and push again ' +
    '("retries"). "wall" is from the common start to the last worker\'s end; checks: every commit is in the history, ' +
    'every shared edit reported as landed is in its Commit, the final shared file holds each line\'s last edit ' +
    '(disjoint case) and `verify`. Tier "reconcile 100,000" (10,000 quick): on the init fixture, a Workspace commits ' +
    '10 new files after another Workspace of the Branch made 10 Commits of 10 files (reconciling), then 10 more ' +
    'files with the head unmoved (plain); median of 3 rounds, and their ratio.',
  order: 62,
  peers: ['git'],
  tiers: (quick) => [
    { label: quick ? '4 × 10' : '8 × 50', value: quick ? 4 : 8, unit: 'workers' },
    { label: `reconcile ${quick ? '10,000' : '100,000'}`, value: quick ? 10_000 : 100_000, unit: 'files' },
  ],
  run(tier, ctx) {
    if (tier.unit === 'files') {
      const fx = useFixture(ctx, ensureTree(tier.value));
      return [ctx.runCell({ tier, cell: reconcileCost, args: { dir: fx.dir, rounds: 3 }, scratch: true })];
    }
    const size = { workers: tier.value, commits: ctx.quick ? 10 : 50 };
    const rows: Row[] = [];
    for (const c of CASES) {
      for (const r of runWithPeers(ctx, { tier, cell: sharedBranch, args: { ...size, ...c.args }, scratch: true })) {
        r.extra.case = c.name;
        rows.push(r);
      }
    }
    return rows;
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = ['tier', 'case', 'tool', 'commits', 'wall', '×git', 'commits/s', 'median', 'p90', 'conflicted', 'retries', 'HeadMoved', 'reconciling / plain'];
    const out = rows.map((r) => {
      const bad = failedCells(r, notes, headers.length, [r.tier, String(r.extra.case ?? ''), r.tool]);
      if (bad) return bad;
      const checks = r.extra.checks !== null && typeof r.extra.checks === 'object' ? (r.extra.checks as Record<string, unknown>) : {};
      for (const [k, v] of Object.entries(checks)) if (!String(v).startsWith('ok')) notes.push(`${r.tool} @ ${r.tier}: check ${k}: ${String(v)}`);
      if (r.cell === 'layerfs-reconcile-cost') {
        return [r.tier, 'head 10 Commits ahead', r.tool, DASH, fmtMs(x(r, 'reconcilingMs')), DASH, DASH, DASH, DASH, DASH, DASH, DASH, `${fmtMs(x(r, 'reconcilingMs'))} / ${fmtMs(x(r, 'plainMs'))} = ${fmtX(x(r, 'ratio'))}`];
      }
      const git = r.tool === 'layerfs' ? rows.find((g) => g.tool === 'git' && g.tier === r.tier && g.extra.case === r.extra.case) : undefined;
      return [
        r.tier,
        String(r.extra.case ?? ''),
        r.tool,
        String(x(r, 'commits') ?? DASH),
        fmtMs(r.ms),
        git ? fmtX(ratio(r.ms, git.ms)) : DASH,
        fmtRate(x(r, 'commitsPerS')),
        fmtMs(x(r, 'medianCommitMs')),
        fmtMs(x(r, 'p90CommitMs')),
        String(x(r, 'conflicted') ?? DASH),
        String(x(r, 'retries') ?? DASH),
        String(x(r, 'headMoved') ?? DASH),
        DASH,
      ];
    });
    return { headers, align: headers.map((_, i) => (i === 1 || i === 2 ? 'l' : 'r')), rows: out, notes };
  },
  chartDefs: [],
};

export default family;
