// Family tool_call: the overhead an agent pays per tool call for its own Workspace —
// client.toolCall with nothing changed (create, status, commit nothing, end) — on a large Branch,
// FUSE (daemon already running; goal ≤ 50 ms) with materialize beside it.

import { countLabel, DASH, fmtMs } from '../lib/format.js';
import { firstLine } from '../lib/table.js';
import { warmCache } from '../lib/warm.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Family, Row, Table } from '../lib/types.js';
import { useFixture } from '../lib/use-fixture.js';
import { toolCall } from '../cells/tool_call.js';

const GOAL_MS = 50;

function num(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}

const family: Family = {
  name: 'tool_call',
  title: 'Empty tool call (one Workspace per call)',
  description:
    '`client.toolCall(branch, () => ({ keep: true }))` that changes nothing: a Workspace of the Branch head ' +
    'is created, its status taken, the commit finds nothing (UpToDate) and the Workspace is ended; one ' +
    'process, SDK wall time per call. FUSE: the Store\'s daemon is running (another Workspace is held open, ' +
    'since the daemon stops when its last mount ends) and a warm-up call made, then 20 FUSE ' +
    'calls and 3 materialize calls (2 at 100,000 files; each writes and removes the whole tree) are ' +
    `timed, interleaved in rounds (FUSE calls, then one materialize call); median, min, p90; goal ≤ ${GOAL_MS} ms ` +
    'for FUSE. Then 20 calls with `standby` (the next Workspace is made in the background during a 3 s ' +
    'pause before each call, as while an agent thinks). The load average at the start and end is in the notes. ' +
    'Tree fixture of 100,000 files (1,000 in quick runs).',
  order: 85,
  charts: false,
  tiers: (quick) => [quick ? 1_000 : 100_000].map((n) => ({ label: countLabel(n), value: n, unit: 'files' })),
  run(tier, ctx) {
    const fx = useFixture(ctx, ensureTree(tier.value));
    warmCache(fx.dir);
    const row = ctx.runCell({ tier, cell: toolCall, args: { dir: fx.dir, calls: 20, mcalls: tier.value >= 100_000 ? 2 : 3, think: 3000 }, scratch: true });
    row.files ??= fx.manifest.files;
    return [row];
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = ['tier', 'fuse (median)', 'min', 'p90', 'goal', 'met', 'fuse + standby (median)', 'p90', 'met', 'materialize (median)', 'daemon warm-up', 'init'];
    const out = rows.map((r) => {
      if (r.status !== 'ok') {
        notes.push(`${r.tool} @ ${r.tier}: ${r.status}: ${firstLine(r.message)}`);
        return [r.tier, `${r.status} [${notes.length}]`, ...Array<string>(headers.length - 2).fill(DASH)];
      }
      const x = r.extra;
      const f = num(x.fuseMs);
      const sb = num(x.standbyMs);
      const met = (v: number | undefined) => (v === undefined ? String(x.fuseSkipped ?? DASH) : v <= GOAL_MS ? 'yes' : 'no');
      return [r.tier, fmtMs(f), fmtMs(num(x.fuseMinMs)), fmtMs(num(x.fuseP90Ms)), `≤ ${GOAL_MS} ms`, met(f), fmtMs(sb), fmtMs(num(x.standbyP90Ms)), met(sb), fmtMs(num(x.materializeMs)), fmtMs(num(x.fuseWarmupMs)), fmtMs(num(x.initMs))];
    });
    for (const r of rows) {
      if (r.status !== 'ok') continue;
      if (num(r.extra.loadStart) !== undefined) notes.push(`${r.tier}: load average ${String(r.extra.loadStart)} at the start, ${String(r.extra.loadEnd)} at the end`);
      for (const [k, label] of [['fusePhases', 'fuse'], ['standbyPhases', 'fuse + standby'], ['materializePhases', 'materialize']] as const) {
        const p = r.extra[k] as Record<string, number> | undefined;
        if (p) notes.push(`${r.tier}, ${label}, median by step: ${Object.entries(p).map(([s, v]) => `${s} ${fmtMs(v)}`).join(', ')}`);
      }
    }
    return { headers, align: ['r', 'r', 'r', 'r', 'l', 'l', 'r', 'r', 'l', 'r', 'r', 'r'], rows: out, notes };
  },
};

export default family;
