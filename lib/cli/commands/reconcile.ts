/** workspace conflicts | resolve | update: what a reconciling commit found, and settling it. */
import type { Command } from 'commander';
import { LayerFsError } from '../../sdk/index.js';
import type { Runner } from '../main.js';
import { withClient } from './db.js';

const short = (id: string | null | undefined) => (id ? id.slice(0, 12) : '-');

export function registerReconcileCommands(program: Command, run: Runner, state: { code: number }): void {
  const ws = program.commands.find((c) => c.name() === 'workspace');
  if (!ws) throw new Error('the workspace command group must be registered first');
  ws.command('conflicts <workspace>')
    .description("what the Workspace's last reconciling commit found overlapping, path by path")
    .action((ref: string) =>
      run(async (out, g) => {
        const list = await withClient(g.store, (c) => c.workspaceConflicts(ref), true);
        out.result({ conflicts: list }, () => {
          if (list.length === 0) return ['no conflicts'];
          return list.flatMap((c) => [
            `${c.id}\t${c.kind}\t${c.path}${c.headPath ? ` (head: ${c.headPath})` : ''}\t${c.resolution ? `resolved: ${c.resolution}` : 'open'}`,
            `\t${c.message}`,
            ...(c.lines ?? []).map((l) => `\tlines base ${l.base[0] + 1}-${l.base[1]}, head ${l.head[0] + 1}-${l.head[1]}, workspace ${l.workspace[0] + 1}-${l.workspace[1]}`),
          ]);
        });
      })(),
    );
  ws.command('resolve <workspace> <conflict>')
    .description("settle a conflict: --branch takes the head's version, --layer the Workspace's base version, --working-tree the Workspace's; then commit")
    .option('--branch', "the Branch head's version")
    .option('--layer', "the version the Workspace started from")
    .option('--working-tree', "the Workspace's own version")
    .action((ref: string, id: string, opts: { branch?: boolean; layer?: boolean; workingTree?: boolean }) =>
      run(async (out, g) => {
        const chosen = (['branch', 'layer', 'working-tree'] as const).filter((k) => (k === 'working-tree' ? opts.workingTree : opts[k]));
        if (chosen.length !== 1) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'choose exactly one of --branch, --layer, --working-tree', { hint: 'layerfs workspace resolve WS CONFLICT --branch' });
        const n = Number(id);
        if (!Number.isInteger(n) || n < 1) throw new LayerFsError('ERR_INVALID_ARGUMENT', `not a conflict number: ${JSON.stringify(id)}`, { id, hint: 'see `layerfs workspace conflicts WS`' });
        const c = await withClient(g.store, (cl) => cl.resolveWorkspaceConflict(ref, n, chosen[0]!));
        out.result({ outcome: 'Resolved', conflict: c }, () => `RESOLVED ${c.id} ${c.path} with the ${chosen[0]} version; commit the Workspace to publish it`);
      })(),
    );
  ws.command('update <workspace>')
    .description("move a clean Workspace onto the Branch's current head, writing in what changed there")
    .action((ref: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.updateWorkspace(ref));
        out.result(r, () => {
          if (r.outcome === 'Updated') return `UPDATED to ${short(r.head)} (${r.written} path(s) written)`;
          if (r.outcome === 'UpToDate') return `UP_TO_DATE ${short(r.head)}`;
          return `BUSY executions still running: ${r.executions.join(', ')}`;
        });
        if (r.outcome === 'Busy') state.code = 3;
      })(),
    );
}
