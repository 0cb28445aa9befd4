// Family sandbox_exec: what a Sandbox costs and whether its CPU limit holds (issue 24). One cell
// run per op (bench/cells/sandbox_exec.ts).

import { DASH, fmtMs } from '../lib/format.js';
import { firstLine } from '../lib/table.js';
import { splitCases } from '../lib/campaign-table.js';
import type { Family, Row, Table } from '../lib/types.js';
import { sandboxExecCell } from '../cells/sandbox_exec.js';
import type { CellArgs } from '../lib/define-cell.js';

function num(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}

const family: Family = {
  name: 'sandbox_exec',
  title: 'Sandboxed executions against plain ones',
  description:
    'start: median wall time of `true` (30 rounds after 2 warm-ups; 100 in full runs) as a plain ' +
    '`spawnSync`, as a Workspace exec without a Sandbox, and as a Workspace exec in a Sandbox ' +
    '(cgroup leaf, sh joining it, bwrap with fresh user, mount, PID, IPC, UTS and network ' +
    'namespaces); overhead = sandboxed − unsandboxed exec, goal ≤ 50 ms. cpu: two busy-loop ' +
    'processes for 2 s (5 s full) in Sandboxes with --cpus 0.5, 1 and 1.5; share = CPU time / ' +
    'wall time from the execution\'s resources (cgroup accounting), which should not exceed the ' +
    'limit (the machine has 2 cores, shared); "throttled periods" counts the 100 ms periods in ' +
    'which the quota ran out (cgroup cpu.stat). Root only.',
  order: 90,
  charts: false,
  tiers: (quick) => [quick ? { label: 'quick', value: 0, unit: 'size' } : { label: 'full', value: 1, unit: 'size' }],
  run(tier, ctx) {
    const cell = (args: CellArgs<typeof sandboxExecCell.args>) => ctx.runCell({ tier, cell: sandboxExecCell, args, scratch: true });
    return [cell({ op: 'start', rounds: ctx.quick ? 30 : 100 }), ...splitCases(cell({ op: 'cpu', seconds: ctx.quick ? 2 : 5 }))];
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = ['tier', 'op', 'plain spawn', 'exec', 'sandboxed', 'overhead / share', 'goal', 'met', 'throttled periods'];
    const out = rows.map((r) => {
      const x = r.extra;
      if (r.status !== 'ok') {
        notes.push(`${r.cell} @ ${r.tier}: ${r.status}: ${firstLine(r.message)}`);
        return [r.tier, r.cell, DASH, DASH, `${r.status} [${notes.length}]`, DASH, DASH, DASH, DASH];
      }
      if (x.op === 'start') {
        const o = num(x.overheadMs);
        return [r.tier, 'start `true`', fmtMs(num(x.spawnMs)), fmtMs(num(x.execMs)), `${fmtMs(num(x.sandboxMs))} (p90 ${fmtMs(num(x.sandboxP90Ms))})`, fmtMs(o), '≤ 50 ms', o !== undefined && o <= 50 ? 'yes' : 'no', DASH];
      }
      const cpus = num(x.cpus) ?? 0;
      const share = num(x.share);
      return [r.tier, r.cell, DASH, DASH, `${fmtMs(num(x.cpuMs))} CPU in ${fmtMs(r.ms)}`, share === undefined ? DASH : `${share.toFixed(2)} CPUs`, `≤ ${cpus} CPUs`, share !== undefined && share <= cpus * 1.05 ? 'yes' : 'no', `${num(x.throttled) ?? '?'} of ${num(x.periods) ?? '?'}`];
    });
    return { headers, align: headers.map((_, i) => (i === 1 || i === 6 ? 'l' : 'r')), rows: out, notes };
  },
};

export default family;
