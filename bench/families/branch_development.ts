// Family branch_development: trunk of 10 commits, two Branches forked at commit 5 with 10
// commits each, then Add the winner — on a tree of 1,000 / 10,000 / 100,000 files (100 quick),
// against git doing the same with branches and worktrees.

import { countLabel, DASH, fmtBytes, fmtInt, fmtMiB, fmtMs } from '../lib/format.js';
import { warmCache } from '../lib/warm.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Row, Table } from '../lib/types.js';
import { failedCells, fmtFineMs, fmtSigned, fmtX, peerOf, ratio, x, type CampaignFamily } from '../lib/campaign-table.js';
import { useFixture } from '../lib/use-fixture.js';
import { branchDevelopment } from '../cells/branch_development.js';
import { runWithPeers } from '../lib/run-cell.js';

const TRUNK = 10;
const FORK_AT = 5;
const BRANCH_COMMITS = 10;

const family: CampaignFamily = {
  name: 'branch_development',
  title: 'Branch development: trunk, two forks, Add the winner',
  description:
    `The init fixture of N files (1,000 / 10,000 / 100,000; 100 in quick runs). layerfs: import it (untimed here: "init"), fork Branch trunk and ` +
    `materialize its Workspace, then ${TRUNK} commits on trunk, each editing 10 files (64-byte ` +
    `mixed overwrite / insert / append edits, seeded per commit); fork Branches a and b at trunk's ` +
    `commit ${FORK_AT} (\`forkBranch({ name, branch, commit })\`, "fork"), a materialized Workspace ` +
    `each ("materialize"), ${BRANCH_COMMITS} commits on each, interleaved a, b; then \`add('a')\`: ` +
    'the winner becomes the next Layer of the LayerStack ("add"); then b\'s Add must refuse with ' +
    'HeadMoved when strict, and otherwise reconcile b onto a\'s Layer: Added, or Conflicted on paths both ' +
    'sides changed since b\'s base Layer (checked; a failed check fails the cell). "commits" is the sum of all 30 `commitWorkspace` calls (edits excluded), ' +
    '"median" their median. git: the tree copied and committed (untimed), the same edits with ' +
    '`git commit -a` (each timed as a process), `git branch` at trunk~5 ("fork"), `git worktree ' +
    'add` ("materialize": a checkout of the whole tree), and `git update-ref` of a published ref ' +
    '("add": git\'s nearest equivalent, a ref update). "changed" is the full size of every edited ' +
    'file summed over commits; "semantic" and "pages" the summed receipts; ".git Δ" for git, ' +
    '"file Δ" for layerfs (Store file + WAL after close minus before). Cost should follow the ' +
    'change (10 files a commit), not the tree.',
  order: 60,
  peers: ['git'],
  tiers: (quick) => (quick ? [100] : [1_000, 10_000, 100_000]).map((n) => ({ label: countLabel(n), value: n, unit: 'files' })),
  run(tier, ctx) {
    const fx = useFixture(ctx, ensureTree(tier.value));
    const args = { dir: fx.dir, files: tier.value, trunk: TRUNK, 'fork-at': FORK_AT, 'branch-commits': BRANCH_COMMITS };
    return runWithPeers(ctx, { tier, cell: branchDevelopment, args }, () => warmCache(fx.dir));
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = [
      'tier', 'tool', 'commits', '×git', 'median', 'trunk median', 'branch median', 'fork', 'materialize', 'add',
      'changed', 'semantic', 'pages', 'file / .git Δ', 'init', 'peak RSS',
    ];
    const out = rows.map((r) => {
      const bad = failedCells(r, notes, headers.length, [r.tier, r.tool]);
      if (bad) return bad;
      const isL = r.tool === 'layerfs';
      const git = isL ? peerOf(rows, r, 'git') : undefined;
      const checks = r.extra.checks !== null && typeof r.extra.checks === 'object' ? (r.extra.checks as Record<string, unknown>) : {};
      for (const [k, v] of Object.entries(checks)) if (!String(v).startsWith('ok')) notes.push(`${r.tool} @ ${r.tier}: check ${k}: ${String(v)}`);
      return [
        r.tier,
        r.tool,
        fmtMs(r.ms),
        git ? fmtX(ratio(r.ms, git.ms)) : DASH,
        fmtMs(x(r, 'medianCommitMs')),
        fmtMs(x(r, 'trunkMedianMs')),
        fmtMs(x(r, 'branchMedianMs')),
        fmtFineMs(x(r, 'forkMs')),
        fmtMs(x(r, 'materializeMs')),
        fmtFineMs(x(r, 'addMs')),
        fmtBytes(x(r, 'changedBytes')),
        isL ? fmtBytes(x(r, 'semanticGrowth')) : DASH,
        isL ? fmtSigned(x(r, 'allocatedGrowth')) : DASH,
        fmtSigned(x(r, 'fileGrowth')),
        fmtMs(x(r, 'initMs')),
        // The git cell runs each git command as a child and does not measure its RSS.
        isL ? fmtMiB(r.maxRssMiB) : DASH,
      ];
    });
    for (const r of rows.filter((q) => q.tool === 'layerfs' && q.status === 'ok')) {
      notes.push(
        `layerfs @ ${r.tier}: ${fmtInt(x(r, 'states'))} states, logical ${fmtBytes(x(r, 'logicalBytes'))}, unique ${fmtBytes(x(r, 'uniqueBytes'))} ` +
          `(analyzeDedup ratio ${fmtX(x(r, 'dedupRatio'))}); add outcome ${String(r.extra.addOutcome)}; b's Add ${String((r.extra.checks as Record<string, unknown> | undefined)?.addLoser ?? DASH)}`,
      );
    }
    return { headers, align: headers.map((_, i) => (i === 1 ? 'l' : 'r')), rows: out, notes };
  },
  chartDefs: [
    { stem: 'commit', title: 'Median commit of 10 edited files', y: 'ms', value: (r) => x(r, 'medianCommitMs'), legend: 'tool' },
    { stem: 'materialize', title: 'Materialize a Workspace / git worktree add', y: 'ms', value: (r) => x(r, 'materializeMs'), legend: 'tool' },
    {
      stem: 'growth',
      title: 'Store growth over 30 commits',
      y: 'bytes',
      values: (r) =>
        r.tool === 'layerfs'
          ? [
              { series: 'changed (whole edited files)', y: x(r, 'changedBytes') },
              { series: 'layerfs semantic', y: x(r, 'semanticGrowth') },
              { series: 'layerfs pages', y: x(r, 'allocatedGrowth') },
            ]
          : [{ series: 'git .git Δ', y: x(r, 'fileGrowth') }],
    },
  ],
};

export default family;
