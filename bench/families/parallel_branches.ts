// Family parallel_branches: 4 Branches of one Layer, each with its own Workspace, 25 small
// commits each, interleaved round-robin in one process. How fast do commits go, and does the
// Store grow by what changed (plus page overhead) and not more?

import { countLabel, DASH, fmtBytes, fmtInt, fmtMiB, fmtMs, fmtRate } from '../lib/format.js';
import { firstLine } from '../lib/table.js';
import { warmCache } from '../lib/warm.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Family, Row, Table } from '../lib/types.js';
import { useFixture } from '../lib/use-fixture.js';
import { parallelBranches } from '../cells/parallel_branches.js';

const BRANCHES = 4;
const COMMITS = 25;
/** Quick runs: a 100-file tree and fewer rounds. */
const QUICK_COMMITS = 8;

function num(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}

/** Signed byte counts (a checkpoint can leave the file smaller than before). */
function fmtSigned(b: number | undefined): string {
  if (b === undefined) return DASH;
  return b < 0 ? `−${fmtBytes(-b)}` : fmtBytes(b);
}

function fmtX(r: number | undefined): string {
  return r === undefined ? DASH : `${r.toFixed(2)}×`;
}

const family: Family = {
  name: 'parallel_branches',
  title: 'Parallel Branches, interleaved small commits',
  description:
    `One Layer (the 1,000-file tree), ${BRANCHES} Branches forked from it, one Workspace each (setup, ` +
    'untimed), close and reconnect (checkpoints the WAL), one no-op `commitWorkspace` per clean ' +
    `Workspace (warms the connection; "no-op" is their median); then ${COMMITS} rounds (${QUICK_COMMITS} on 100 files in quick runs), ` +
    'round-robin over the Branches in one process: edit 1–3 files ' +
    '(100–300 bytes each, mixed overwrite/insert/append, seeded per Branch and round) and ' +
    '`commitWorkspace`. "commits" is the sum of the commit calls (edits excluded; "loop" includes ' +
    'them); "changed" the full size of each edited file, summed over commits; "semantic" the sum of ' +
    "the receipts' bytesInserted; \"pages\" the sum of their allocatedGrowth; \"file\" Store file + WAL " +
    'after minus before, both after a close (WAL checkpointed). Goal: semantic / changed ≈ 1 plus ' +
    'page overhead. Afterwards (untimed, figures already taken) the rest of the Branch API is ' +
    'exercised — fork from a Commit, Add, Add of a stale Branch (HeadMoved expected), endWorkspace ' +
    '— and any surprise is listed under the table.',
  order: 32,
  charts: false,
  tiers: (quick) => [quick ? 100 : 1_000].map((n) => ({ label: countLabel(n), value: n, unit: 'files' })),
  run(tier, ctx) {
    const fx = useFixture(ctx, ensureTree(tier.value));
    warmCache(fx.dir);
    const row = ctx.runCell({
      tier,
      cell: parallelBranches,
      args: { dir: fx.dir, files: tier.value, branches: BRANCHES, commits: ctx.quick ? QUICK_COMMITS : COMMITS },
    });
    return [row];
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = [
      'tier', 'branches × commits', 'commits', 'loop', 'commits/s', 'median', 'p90', 'no-op', 'round 1 → last',
      'changed', 'semantic', 'semantic / changed', 'pages', 'pages / changed', 'file', 'file / changed', 'peak RSS',
    ];
    const out = rows.map((r) => {
      if (r.status !== 'ok') {
        notes.push(`${r.tool} @ ${r.tier}: ${r.status}: ${firstLine(r.message)}`);
        return [r.tier, `${r.status} [${notes.length}]`, ...Array<string>(headers.length - 2).fill(DASH)];
      }
      const x = r.extra;
      const checks = x.apiChecks !== null && typeof x.apiChecks === 'object' ? (x.apiChecks as Record<string, unknown>) : {};
      for (const [k, v] of Object.entries(checks)) if (!String(v).startsWith('ok')) notes.push(`${r.tier}: API check ${k}: ${String(v)}`);
      return [
        r.tier,
        `${fmtInt(num(x.branches))} × ${fmtInt((num(x.commits) ?? 0) / (num(x.branches) ?? 1))}`,
        fmtMs(r.ms),
        fmtMs(num(x.loopMs)),
        fmtRate(num(x.commitsPerS)),
        fmtMs(num(x.medianCommitMs)),
        fmtMs(num(x.p90CommitMs)),
        fmtMs(num(x.noopCommitMs)),
        `${fmtMs(num(x.firstRoundMedianMs))} → ${fmtMs(num(x.lastRoundMedianMs))}`,
        fmtBytes(num(x.changedBytes)),
        fmtBytes(num(x.bytesInserted)),
        fmtX(num(x.semanticPerChanged)),
        fmtSigned(num(x.allocatedGrowth)),
        fmtX(num(x.allocatedPerChanged)),
        fmtSigned(num(x.fileGrowth)),
        fmtX(num(x.filePerChanged)),
        fmtMiB(r.maxRssMiB),
      ];
    });
    return { headers, align: headers.map((_, i) => (i === 1 ? 'l' : 'r')), rows: out, notes };
  },
};

export default family;
