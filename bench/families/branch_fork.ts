// Family branch_fork: forkBranch alone, on a LayerStack imported from a small and from a large
// tree. A fork copies no data, so its cost should not depend on the size of the tree: the table
// gives each tier's median fork and its ratio to the smallest tier of the same run.

import { countLabel, DASH, fmtBytes, fmtInt, fmtMiB, fmtMs, fmtRatio } from '../lib/format.js';
import { firstLine } from '../lib/table.js';
import { warmCache } from '../lib/warm.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Family, Row, Table } from '../lib/types.js';
import { useFixture } from '../lib/use-fixture.js';
import { branchFork } from '../cells/branch_fork.js';

const FORKS = 20;

function num(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}

/** Sub-millisecond times need more digits than fmtMs gives. */
function fmtFine(ms: number | undefined): string {
  if (ms === undefined) return DASH;
  return ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : ms < 10 ? `${ms.toFixed(2)} ms` : fmtMs(ms);
}

const family: Family = {
  name: 'branch_fork',
  title: 'Fork a Branch from a Layer',
  description:
    `Time of \`forkBranch({ name, layer })\` alone: import the tree as the genesis Layer (setup, timed ` +
    `apart as "init"), then fork ${FORKS} Branches from it one by one, each timed alone; "fork" is the ` +
    'median of those. A fork copies no data, so it should cost the same on 100 and on 100,000 files ' +
    '(1,000 in quick runs): "× smallest" is this tier\'s median over the smallest tier\'s, same run. ' +
    '"objects +" is the objects the forks added (expected 0).',
  order: 30,
  charts: false,
  tiers: (quick) => (quick ? [100, 1_000] : [100, 100_000]).map((n) => ({ label: countLabel(n), value: n, unit: 'files' })),
  run(tier, ctx) {
    const fx = useFixture(ctx, ensureTree(tier.value));
    warmCache(fx.dir);
    const row = ctx.runCell({ tier, cell: branchFork, args: { dir: fx.dir, forks: FORKS } });
    row.files ??= fx.manifest.files;
    row.bytes ??= fx.manifest.bytes;
    return [row];
  },
  table(rows: Row[]): Table {
    const ok = rows.filter((r) => r.status === 'ok' && r.ms !== undefined);
    const base = ok.length > 0 ? ok.reduce((m, r) => (r.tierValue < m.tierValue ? r : m)) : undefined;
    const notes: string[] = [];
    const headers = ['tier', 'fork (median)', 'min', 'p90', 'max', '× smallest', 'init (untimed)', 'objects', 'objects +', 'store +', 'peak RSS'];
    const out = rows.map((r) => {
      if (r.status !== 'ok') {
        notes.push(`${r.tool} @ ${r.tier}: ${r.status}: ${firstLine(r.message)}`);
        return [r.tier, `${r.status} [${notes.length}]`, ...Array<string>(headers.length - 2).fill(DASH)];
      }
      const x = r.extra;
      return [
        r.tier,
        fmtFine(r.ms),
        fmtFine(num(x.minMs)),
        fmtFine(num(x.p90Ms)),
        fmtFine(num(x.maxMs)),
        fmtRatio(base?.ms && r.ms !== undefined ? r.ms / base.ms : undefined),
        fmtMs(num(x.initMs)),
        fmtInt(r.objects),
        fmtInt(num(x.objectsAddedByForks)),
        fmtBytes(num(x.storeBytesAddedByForks)),
        fmtMiB(r.maxRssMiB),
      ];
    });
    const big = ok.length > 1 ? ok.reduce((m, r) => (r.tierValue > m.tierValue ? r : m)) : undefined;
    if (base && big && big !== base) {
      notes.push(
        `fork at ${big.tier} files / fork at ${base.tier} files = ${fmtRatio(big.ms! / base.ms!)} ` +
          `(goal: 1× within noise; repsMs shows each rep's median in the results JSON)`,
      );
    }
    return { headers, align: ['r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'], rows: out, notes };
  },
};

export default family;
