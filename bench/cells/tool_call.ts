// Cell: overhead of an empty tool call — client.toolCall(branch, fn) where fn changes nothing and
// asks to keep (create the Workspace, status, commit nothing, end) — on a Branch of a tree
// fixture, through the SDK in one process. FUSE: the Store's daemon is started by a Workspace held
// open meanwhile (the daemon stops when its last mount ends) and a warm-up call, then --calls calls are timed one by one; materialize: --mcalls calls (each writes the
// whole tree). `ms` is the FUSE median (the materialize median when FUSE is unusable here).
// Then --calls FUSE calls with `standby` after --think ms each (the next Workspace is made while
// the agent would think), timed the same way.
//   node --import tsx bench/cells/tool_call.ts --cell layerfs-tool-call --dir FIXTURE --tmp SCRATCH --tier 100000 [--calls 20] [--mcalls 3]

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '../../lib/sdk/index.js';
import { fuseAvailable } from '../../lib/fuse/index.js';
import { round1 } from '../lib/cell.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';

const TOOL_CALL_OPTIONS = {
  calls: { type: 'string', default: '20' },
  mcalls: { type: 'string', default: '3' },
  think: { type: 'string', default: '3000' },
} as const;

const r2 = (ms: number) => Math.round(ms * 100) / 100;
const sorted = (xs: number[]) => [...xs].sort((p, q) => p - q);
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)]!;
const p90 = (xs: number[]) => sorted(xs)[Math.min(xs.length - 1, Math.floor(xs.length * 0.9))]!;

/** With `thinkMs`, each call is preceded by that pause (an agent's think time: the standby is made meanwhile). */
/** Each call's phases (toolCall's own breakdown), per timeCalls run. */
let phases: Record<string, number>[] = [];

function medianPhases(): Record<string, number> {
  const keys = [...new Set(phases.flatMap((p) => Object.keys(p)))];
  return Object.fromEntries(keys.map((k) => [k, r2(median(phases.map((p) => p[k] ?? 0)))]));
}

async function timeCalls(c: Client, projection: 'fuse' | 'materialize', n: number, thinkMs = 0): Promise<number[]> {
  const out: number[] = [];
  phases = [];
  for (let i = 0; i < n; i++) {
    if (thinkMs > 0) await new Promise((r) => setTimeout(r, thinkMs));
    const t = performance.now();
    const r = await c.toolCall('main', () => ({ keep: true, message: 'empty' }), { projection, standby: thinkMs > 0 });
    out.push(performance.now() - t);
    phases.push(r.phases);
    if (r.outcome !== 'UpToDate') throw new Error(`an empty tool call gave ${r.outcome}`);
  }
  return out;
}

async function toolCallMeasure(a: Given<typeof TOOL_CALL_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const storePath = path.join(path.resolve(a.tmp), 'bench.layerfs');
  const c = Client.create(storePath);
  try {
    const t0 = performance.now();
    const init = await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
    const initMs = performance.now() - t0;
    c.forkBranch({ name: 'main', layer: init.layer.id });
    const extra: Record<string, unknown> = { initMs: round1(initMs) };
    const fuse = fuseAvailable();
    if (fuse.ok && process.getuid?.() === 0) {
      // The daemon stops when its last mount ends: one Workspace held open keeps it running, as
      // any other open Workspace of the Store would.
      const tw = performance.now();
      const keeper = await c.createWorkspace('main', { at: path.join(path.resolve(a.tmp), 'keeper'), projection: 'fuse' });
      extra.fuseWarmupMs = round1(performance.now() - tw);
      await timeCalls(c, 'fuse', 1);
      const xs = await timeCalls(c, 'fuse', Math.max(1, Number(a.calls)));
      Object.assign(extra, { fuseMs: r2(median(xs)), fuseMinMs: r2(Math.min(...xs)), fuseP90Ms: r2(p90(xs)), fuseCalls: xs.length, fusePhases: medianPhases() });
      await timeCalls(c, 'fuse', 1, 1); // makes the first standby
      const sb = (await timeCalls(c, 'fuse', Math.max(1, Number(a.calls)), Number(a.think))).slice(0);
      await c.endStandbys();
      await c.endWorkspace(keeper.id, { discard: true });
      Object.assign(extra, { standbyMs: r2(median(sb)), standbyMinMs: r2(Math.min(...sb)), standbyP90Ms: r2(p90(sb)), thinkMs: Number(a.think), standbyPhases: medianPhases() });
    } else extra.fuseSkipped = fuse.ok ? 'not root' : fuse.reason;
    const ms = await timeCalls(c, 'materialize', Math.max(1, Number(a.mcalls)));
    Object.assign(extra, { materializeMs: round1(median(ms)), materializeMinMs: round1(Math.min(...ms)), materializeCalls: ms.length, materializePhases: medianPhases() });
    return { ms: (extra.fuseMs as number | undefined) ?? (extra.materializeMs as number), ...extra };
  } finally {
    await c.stopDaemon({ discard: true }).catch(() => {});
    c.close();
  }
}

export const toolCall = defineCell({
  file: import.meta.url,
  id: 'layerfs-tool-call',
  tool: 'layerfs',
  args: TOOL_CALL_OPTIONS,
  required: ['dir', 'tmp'],
  run: toolCallMeasure,
});

runIfMain(import.meta.url, toolCall);
