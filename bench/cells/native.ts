// Cell: runs the micro-benchmarks of bench/micro/native.bench.ts (another engineer's file) in a
// child process like every other cell. Absent file → a "skipped" line, not an error.
//   node --import tsx bench/cells/native.ts [--quick]

import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { emit, fail, round1 } from '../lib/cell.js';
import { NATIVE_BENCH } from '../lib/paths.js';

const CELL = 'native';
const { values: a } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, tier: { type: 'string', default: 'micro' } },
});
const tier = a.tier!;

type RunNativeBench = (opts: { quick: boolean }) => Promise<Record<string, number>>;

try {
  if (!fs.existsSync(NATIVE_BENCH)) {
    emit({ cell: CELL, tier, skipped: 'bench/micro/native.bench.ts is not present' });
  } else {
    // Beside this file: the TypeScript source under tsx, its compiled copy in a compiled run.
    const mod = (await import(new URL('../micro/native.bench.js', import.meta.url).href)) as { runNativeBench?: RunNativeBench };
    if (typeof mod.runNativeBench !== 'function') throw new Error('native.bench.ts exports no runNativeBench');
    const t0 = performance.now();
    const results = await mod.runNativeBench({ quick: a.quick! });
    emit({ cell: CELL, tier, ms: round1(performance.now() - t0), results });
  }
} catch (err) {
  fail(CELL, tier, err);
}
