/** monitor snapshot | analyze-dedup */
import type { Command } from 'commander';
import { formatBytes } from '../output.js';
import { withClient, type Runner } from '../runner.js';

/** +1.2 MiB, -296.0 KiB: a growth that may be negative (repack, VACUUM). */
const signedBytes = (n: number) => `${n < 0 ? '-' : '+'}${formatBytes(Math.abs(n))}`;

/** "; phases walkRead 12.0 ms (30%), …" — where the time of import and commit went. */
function phaseText(phases: Record<string, number>, total: number): string {
  const parts = Object.entries(phases).map(([k, v]) => `${k} ${v.toFixed(1)} ms${total > 0 ? ` (${Math.round((100 * v) / total)}%)` : ''}`);
  return parts.length > 0 ? `; phases ${parts.join(', ')}` : '';
}

export function registerMonitorCommands(program: Command, run: Runner): void {
  const m = program.command('monitor').description('receipts and storage analysis');
  m.command('snapshot')
    .description('summarise recent receipts (per operation: count, outcomes, time, objects and bytes)')
    .action(() =>
      run(async (out, g) => {
        const s = await withClient(g.store, (c) => c.monitorSnapshot(), true);
        out.result(s, () => [
          `${s.receipts} receipts since ${s.since ?? '-'}`,
          ...s.operations.map(
            (o) =>
              `${o.operation.padEnd(18)} ${String(o.count).padStart(5)}× median ${o.msMedian.toFixed(1)} ms p90 ${o.msP90.toFixed(1)} ms; ${Object.entries(o.outcomes)
                .map(([k, v]) => `${k} ${v}`)
                .join(', ')}; ${signedBytes(o.semanticGrowth)} semantic, ${signedBytes(o.allocatedGrowth)} allocated${phaseText(o.phasesMs, o.msTotal)}`,
          ),
        ]);
      })(),
    );
  m.command('analyze-dedup')
    .description('traverse the Store: logical vs unique vs stored vs allocated bytes, dedup per Layer and Branch')
    .option('--layerstack <name>', 'only this LayerStack and its Branches')
    .option('--top <n>', 'largest contributors to list', (v) => Number(v), 10)
    .action((opts: { layerstack?: string; top: number }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.analyzeDedup({ layerStack: opts.layerstack, top: opts.top }), true);
        out.result(r, () => [
          `logical ${formatBytes(r.logicalBytes)} over ${r.states.length} states; unique ${formatBytes(r.uniqueBytes)} in ${r.uniqueObjects} objects; stored ${formatBytes(r.storedBytes)}; allocated ${formatBytes(r.allocatedBytes)}; file ${formatBytes(r.fileBytes)}; dedup ${r.dedupRatio.toFixed(1)}×`,
          'states:',
          ...r.states.map((s) => `  ${s.label.padEnd(28)} logical ${formatBytes(s.logicalBytes).padStart(10)}  new ${formatBytes(s.newBytes).padStart(10)}  ${Number.isFinite(s.dedupRatio) ? s.dedupRatio.toFixed(1) + '×' : '∞'}`),
          'branches:',
          ...r.branches.map((b) => `  ${b.name.padEnd(28)} logical ${formatBytes(b.logicalBytes).padStart(10)}  new ${formatBytes(b.newBytes).padStart(10)}`),
          'largest contributors:',
          ...r.largest.map((c) => `  ${formatBytes(c.newBytes).padStart(10)}  ${c.label} ${c.path}`),
        ]);
      })(),
    );
}
