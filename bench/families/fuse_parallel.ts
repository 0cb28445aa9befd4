// Family fuse_parallel: parallel serving of one FUSE Workspace (issue 18), reader threads on
// against off in the same cell run (bench/cells/fuse_parallel.ts).

import { DASH, fmtRatio } from '../lib/format.js';
import { firstLine } from '../lib/table.js';
import type { Family, Row, Table } from '../lib/types.js';
import { fuseParallelCell } from '../cells/fuse_parallel.js';

const num = (x: unknown): number | undefined => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);
const mibps = (x: unknown) => (num(x) === undefined ? DASH : `${Math.round(num(x)!)} MiB/s`);
const us = (x: unknown) => (num(x) === undefined ? DASH : `${num(x)!.toFixed(0)} µs`);

/**
 * The pair's goal: 1.3× one reader, or the bound where that is lower. Within 5 % of the bound
 * counts as at it: the bound and the pair are medians of separate runs, each noisy by that much.
 */
function pairMet(s: Record<string, unknown>): string {
  const speedup = num(s.pairSpeedup);
  const bound = num(s.pairBound);
  if (speedup === undefined) return DASH;
  if (speedup >= 1.3) return 'yes';
  return bound !== undefined && bound < 1.3 && speedup >= 0.95 * bound ? 'yes (bound)' : 'no';
}

function rows(r: Row): string[][] {
  const x = r.extra;
  const side = (k: 'readers' | 'single') => (x[k] ?? {}) as Record<string, unknown>;
  const line = (k: 'readers' | 'single', label: string) => {
    const s = side(k);
    const cores = num(s.coldCores);
    return [r.tier, label, mibps(s.coldMiBps), fmtRatio(num(s.coldRatio)), cores === undefined ? DASH : cores.toFixed(2), mibps(s.pairMiBps), fmtRatio(num(s.pairSpeedup)), fmtRatio(num(s.pairBound)), pairMet(s), `${us(s.statIdleUs)} / ${us(s.statBusyUs)}`, fmtRatio(num(s.statRatio))];
  };
  return [line('readers', 'reader threads'), line('single', 'serving thread only'), [r.tier, 'plain directory', mibps(x.plainMiBps), '1.00×', DASH, DASH, fmtRatio(num(x.plainPairSpeedup)), DASH, DASH, DASH, DASH]];
}

const family: Family = {
  name: 'fuse_parallel',
  title: 'Parallel serving of one FUSE Workspace',
  description:
    'One FUSE Workspace (kernel backend) served with reader threads (the default) against the same ' +
    'Store content served by the serving thread alone (`LAYERFS_FUSE_READERS=0`, a second daemon on ' +
    'a copy of the Store), interleaved rounds, medians. cold: `dd bs=1M` of a random file after ' +
    'posix_fadvise(DONTNEED) on it, against the same on a plain file (the Store file stays in the page ' +
    'cache on both; goal ≥ 0.8×). pair: two `dd` of two different random files through the mount at ' +
    'once, combined throughput over one reader (goal ≥ 1.3×, or the bound where lower: the cores two ' +
    'CPU-bound processes get (two `sha256sum` of cached files against one, same run) over the cores one ' +
    'cold read keeps busy ("cores": the daemon\'s CPU, every thread, plus the `dd`\'s, over its wall ' +
    'time), at most 2×; "met" counts a pair within 5 % of a bound under 1.3× as at it; the same pair on ' +
    'plain files is shown too). stat: median ' +
    'lstat(2) of fresh names, idle / during a cold read of the file (goal ≤ 2×). 1 GiB files (64 MiB quick).',
  order: 81,
  charts: false,
  tiers: (quick) => [quick ? { label: 'quick', value: 64, unit: 'MiB' } : { label: '1 GiB', value: 1024, unit: 'MiB' }],
  run(tier, ctx) {
    return [ctx.runCell({ tier, cell: fuseParallelCell, args: { mib: tier.value, rounds: ctx.quick ? 2 : 3 }, scratch: true })];
  },
  table(all: Row[]): Table {
    const notes: string[] = [];
    const headers = ['tier', 'served by', 'cold read', '× plain', 'cores', 'two readers', 'speedup', 'bound', 'met', 'stat idle / busy', 'busy ×'];
    const out: string[][] = [];
    for (const r of all) {
      if (r.status !== 'ok') {
        notes.push(`${r.tier}: ${r.status}: ${firstLine(r.message)}`);
        out.push([r.tier, `${r.status} [${notes.length}]`, DASH, DASH, DASH, DASH, DASH, DASH, DASH, DASH, DASH]);
        continue;
      }
      out.push(...rows(r));
      notes.push(`${r.tier}: load ${String(r.extra.load)}; two CPU-bound processes against one here: ${fmtRatio(num(r.extra.cpuPairSpeedup))} (the most a second reader can gain at this load).`);
    }
    notes.push('Quick files (64 MiB) fit the daemon\'s 64 MiB chunk caches across rounds, so its cold reads are partly warm there: judge the goals at 1 GiB.');
    return { headers, align: headers.map((_, i) => (i === 1 ? 'l' : 'r')), rows: out, notes };
  },
};

export default family;
