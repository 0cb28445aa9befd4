// Cell: overhead of an empty tool call — client.toolCall(branch, fn) where fn changes nothing and
// asks to keep (create the Workspace, status, commit nothing, end) — on a Branch of a tree
// fixture, through the SDK in one process. FUSE: the Store's daemon is started by a Workspace held
// open meanwhile (the daemon stops when its last mount ends) and a warm-up call, then --calls
// FUSE calls and --mcalls materialize calls (each writes the whole tree) are timed one by one,
// interleaved in --mcalls rounds. `ms` is the FUSE median (the materialize median when FUSE is
// unusable here). The load average is recorded at the start and the end.
// Then --calls FUSE calls with `standby` after --think ms each (the next Workspace is made while
// the agent would think), timed the same way.
//   node --import tsx bench/cells/tool_call.ts --cell layerfs-tool-call --dir FIXTURE --tmp SCRATCH --tier 100000 [--calls 20] [--mcalls 3]

import { loadavg } from 'node:os';
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

/** Each call's wall time and phases (toolCall's own breakdown). */
interface Calls {
  ms: number[];
  phases: Record<string, number>[];
}

function medianPhases(phases: Record<string, number>[]): Record<string, number> {
  const keys = [...new Set(phases.flatMap((p) => Object.keys(p)))];
  return Object.fromEntries(keys.map((k) => [k, r2(median(phases.map((p) => p[k] ?? 0)))]));
}

/** With `thinkMs`, each call is preceded by that pause (an agent's think time: the standby is made meanwhile). */
async function timeCalls(c: Client, projection: 'fuse' | 'materialize', n: number, into: Calls = { ms: [], phases: [] }, thinkMs = 0): Promise<Calls> {
  for (let i = 0; i < n; i++) {
    if (thinkMs > 0) await new Promise((r) => setTimeout(r, thinkMs));
    const t = performance.now();
    const r = await c.toolCall('main', () => ({ keep: true, message: 'empty' }), { projection, standby: thinkMs > 0 });
    into.ms.push(performance.now() - t);
    into.phases.push(r.phases);
    if (r.outcome !== 'UpToDate') throw new Error(`an empty tool call gave ${r.outcome}`);
  }
  return into;
}

const load = () => round1(loadavg()[0]!);

/**
 * FUSE and materialize calls interleaved: --mcalls rounds, each of --calls/--mcalls FUSE calls
 * then one materialize call, so both see the same load over the run.
 */
async function interleaved(c: Client, a: Given<typeof TOOL_CALL_OPTIONS, 'dir' | 'tmp'>, fuse: boolean): Promise<{ f: Calls; m: Calls }> {
  const rounds = Math.max(1, Number(a.mcalls));
  const per = Math.max(1, Math.ceil(Number(a.calls) / rounds));
  const f: Calls = { ms: [], phases: [] };
  const m: Calls = { ms: [], phases: [] };
  for (let r = 0; r < rounds; r++) {
    if (fuse) await timeCalls(c, 'fuse', per, f);
    await timeCalls(c, 'materialize', 1, m);
  }
  return { f, m };
}

async function toolCallMeasure(a: Given<typeof TOOL_CALL_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const storePath = path.join(path.resolve(a.tmp), 'bench.layerfs');
  const c = Client.create(storePath);
  try {
    const t0 = performance.now();
    const init = await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
    const initMs = performance.now() - t0;
    c.forkBranch({ name: 'main', layer: init.layer.id });
    const extra: Record<string, unknown> = { initMs: round1(initMs), loadStart: load() };
    const fuse = fuseAvailable();
    const useFuse = fuse.ok && process.getuid?.() === 0;
    if (!useFuse) extra.fuseSkipped = fuse.ok ? 'not root' : fuse.reason;
    // The daemon stops when its last mount ends: one Workspace held open keeps it running, as
    // any other open Workspace of the Store would.
    const tw = performance.now();
    const keeper = useFuse ? await c.createWorkspace('main', { at: path.join(path.resolve(a.tmp), 'keeper'), projection: 'fuse' }) : undefined;
    if (useFuse) {
      extra.fuseWarmupMs = round1(performance.now() - tw);
      await timeCalls(c, 'fuse', 1);
    }
    const { f, m } = await interleaved(c, a, useFuse);
    if (useFuse) Object.assign(extra, { fuseMs: r2(median(f.ms)), fuseMinMs: r2(Math.min(...f.ms)), fuseP90Ms: r2(p90(f.ms)), fuseCalls: f.ms.length, fusePhases: medianPhases(f.phases) });
    Object.assign(extra, { materializeMs: round1(median(m.ms)), materializeMinMs: round1(Math.min(...m.ms)), materializeCalls: m.ms.length, materializePhases: medianPhases(m.phases) });
    if (keeper) {
      await timeCalls(c, 'fuse', 1, undefined, 1); // makes the first standby
      const sb = await timeCalls(c, 'fuse', Math.max(1, Number(a.calls)), undefined, Number(a.think));
      await c.endStandbys();
      await c.endWorkspace(keeper.id, { discard: true });
      Object.assign(extra, { standbyMs: r2(median(sb.ms)), standbyMinMs: r2(Math.min(...sb.ms)), standbyP90Ms: r2(p90(sb.ms)), thinkMs: Number(a.think), standbyPhases: medianPhases(sb.phases) });
    }
    extra.loadEnd = load();
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
