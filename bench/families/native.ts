// Family native: the micro-benchmarks of bench/micro/native.bench.ts (chunker, hash, ...), run
// in one child process. Each figure becomes one row; the values are
// shown as that file reports them (its keys should name their unit).

import { firstLine } from '../lib/table.js';
import { DASH } from '../lib/format.js';
import type { Family, Row } from '../lib/types.js';
import { nativeCell } from '../cells/native.js';

const family: Family = {
  name: 'native',
  title: 'Native micro-benchmarks',
  description:
    'tinybench micro-benchmarks of the native addon (bench/micro/native.bench.ts, `runNativeBench`), ' +
    'run in one child process; each key is reported as returned (the key names its unit).',
  order: 0,
  charts: false,
  tiers: () => [{ label: 'micro', value: 0, unit: 'run' }],
  run(tier, ctx) {
    const row = ctx.runCell({ tier, cell: nativeCell, args: { quick: ctx.quick }, scratch: false });
    const results = row.extra.results;
    if (row.status !== 'ok' || results === null || typeof results !== 'object') return [row];
    return Object.entries(results as Record<string, unknown>).map(
      ([name, v]): Row => ({
        ...row,
        cell: name,
        value: typeof v === 'number' ? v : undefined,
        extra: {},
      }),
    );
  },
  table(rows) {
    const notes: string[] = [];
    const out = rows.map((r) => {
      if (r.status !== 'ok') {
        notes.push(`${r.status}: ${firstLine(r.message)}`);
        return [r.cell, `${r.status} [${notes.length}]`];
      }
      return [r.cell, r.value === undefined ? DASH : r.value.toLocaleString('en-US', { maximumSignificantDigits: 4 })];
    });
    return { headers: ['benchmark', 'value'], align: ['l', 'r'], rows: out, notes };
  },
};

export default family;
