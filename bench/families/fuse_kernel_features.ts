// Family fuse_kernel_features: each optional FUSE INIT feature of the kernel backend
// (lib/fuse/kernel-features.ts) on against off, in one cell run per pair
// (bench/cells/fuse_kernel_features.ts --ab FEATURE): two Stores, one daemon each with its own
// LAYERFS_FUSE_FEATURES, the op alternated between them, each run with its own plain-directory run.

import { DASH, fmtMs, fmtRatio } from '../lib/format.js';
import { firstLine } from '../lib/table.js';
import type { Family, Row, Table } from '../lib/types.js';
import { fuseKernelFeaturesCell } from '../cells/fuse_kernel_features.js';
import type { CellArgs } from '../lib/define-cell.js';

type Args = CellArgs<typeof fuseKernelFeaturesCell.args>;

/** The pairs measured: op, feature, sizes (full; quick). */
const PAIRS: { op: string; ab: string; full: Args; quick: Args }[] = [
  { op: 'write', ab: 'writeback', full: { mib: 1024 }, quick: { mib: 64 } },
  { op: 'untar', ab: 'writeback', full: { files: 10_000 }, quick: { files: 300 } },
  { op: 'commit', ab: 'writeback', full: { mib: 100, rounds: 7 }, quick: { mib: 16, rounds: 3 } },
  { op: 'stat', ab: 'readdirplus', full: { files: 10_000 }, quick: { files: 300 } },
  { op: 'write', ab: 'maxpages', full: { mib: 1024 }, quick: { mib: 64 } },
  { op: 'read', ab: 'maxpages', full: { mib: 1024 }, quick: { mib: 64 } },
];

const num = (x: unknown): number | undefined => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);

/** One side's median figures in the words of its op. */
function side(op: string, x: unknown): string {
  const f = (x ?? {}) as Record<string, unknown>;
  if (op === 'commit') return `${fmtMs(num(f.ms))} (daemon ${fmtMs(num(f.daemonMedianMs))})`;
  if (op === 'stat') return `cold ${fmtRatio(num(f.coldRatio))}, warm ${fmtRatio(num(f.ratio))}`;
  if (op === 'untar') return `${fmtRatio(num(f.ratio))}; ${(num(f.requestsPerFile) ?? 0).toFixed(1)} requests/file; mount / floor ${fmtRatio(num(f.ownRatio))}`;
  if (op === 'read') return `${fmtRatio(num(f.ratio))}; served ${Math.round(num(f.servedMiBps) ?? 0)} MiB/s`;
  return `${fmtRatio(num(f.ratio))}, ${Math.round(num(f.mountMiBps) ?? 0)} MiB/s`;
}

const family: Family = {
  name: 'fuse_kernel_features',
  title: 'FUSE kernel features, on against off',
  description:
    'Each optional INIT feature of the kernel backend (docs/FUSE.md, "Kernel features") measured on and off in one cell run: two ' +
    'Stores, one mounted with the feature on and one with it off (each mount starts its daemon with its own ' +
    '`LAYERFS_FUSE_FEATURES`), the op run alternately on each (a fresh mount each time, 3 rounds; 2 quick), every run with its ' +
    'own plain-directory run; medians. Ops as in `fuse_mount` (write and read 1 GiB, untar 10,000 files, `find | xargs stat` ' +
    'over 10,000 files, a 4 KiB overwrite + commit in a 100 MiB file; quick: 64 MiB, 300 files, 16 MiB), one run each. ' +
    'Ratios: write and read are throughput against the plain directory (higher is better), untar and stat time (lower is better).',
  order: 81,
  charts: false,
  tiers: (quick) => [quick ? { label: 'quick', value: 0, unit: 'size' } : { label: 'full', value: 1, unit: 'size' }],
  run(tier, ctx) {
    return PAIRS.map((p) => {
      const args: Args = { op: p.op, ab: p.ab, 'ab-rounds': ctx.quick ? 2 : 3, best: 1, ...(ctx.quick ? p.quick : p.full) };
      const row = ctx.runCell({ tier, cell: fuseKernelFeaturesCell, args, scratch: true });
      row.extra.op ??= p.op;
      row.extra.ab ??= p.ab;
      return row;
    });
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = ['tier', 'op', 'feature', 'size', 'on', 'off'];
    const out = rows.map((r) => {
      const x = r.extra;
      const op = String(x.op ?? '?');
      // `files` is a Row field of its own (run-cell.ts lifts the known keys out of extra).
      const files = r.files ?? x.files;
      const size = files !== undefined ? `${String(files)} files` : x.mib !== undefined ? `${String(x.mib)} MiB` : DASH;
      if (r.status !== 'ok') {
        notes.push(`${op} / ${String(x.ab)} @ ${r.tier}: ${r.status}: ${firstLine(r.message)}`);
        return [r.tier, op, String(x.ab ?? DASH), DASH, `${r.status} [${notes.length}]`, DASH];
      }
      return [r.tier, op, String(x.ab), size, side(op, x.on), side(op, x.off)];
    });
    notes.push('Each figure is the median over the rounds of one side; every round has its own plain-directory run.');
    return { headers, align: headers.map((_, i) => (i === 1 || i === 2 || i >= 4 ? 'l' : 'r')), rows: out, notes };
  },
};

export default family;
