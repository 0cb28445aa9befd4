// Cell: runs the micro-benchmarks of bench/micro/native.bench.ts in a
// child process like every other cell. Absent file → a "skipped" line, not an error.
//   node --import tsx bench/cells/native.ts --cell native [--quick]

import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { round1 } from '../lib/cell.js';
import { NATIVE_BENCH } from '../lib/paths.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';

const NATIVE_OPTIONS = {
  quick: { type: 'boolean', default: false },
} as const;

type RunNativeBench = (opts: { quick: boolean }) => Promise<Record<string, number>>;

async function nativeMicro(a: Given<typeof NATIVE_OPTIONS, never>): Promise<CellResult> {
  if (!fs.existsSync(NATIVE_BENCH)) {
    return { skipped: 'bench/micro/native.bench.ts is not present' };
  } else {
    // Beside this file: the TypeScript source under tsx, its compiled copy in a compiled run.
    const mod = (await import(new URL('../micro/native.bench.js', import.meta.url).href)) as { runNativeBench?: RunNativeBench };
    if (typeof mod.runNativeBench !== 'function') throw new Error('native.bench.ts exports no runNativeBench');
    const t0 = performance.now();
    const results = await mod.runNativeBench({ quick: a.quick! });
    return { ms: round1(performance.now() - t0), results };
  }
}

export const nativeCell = defineCell({
  file: import.meta.url,
  id: 'native',
  tool: 'layerfs',
  args: NATIVE_OPTIONS,
  run: nativeMicro,
});

runIfMain(import.meta.url, nativeCell);
