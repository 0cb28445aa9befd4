/** context use | show: which Store later commands use. */
import type { Command } from 'commander';
import { Client, LayerFsError } from '../../sdk/index.js';
import { chooseStore, contextPath, writeContext, writeProjectContext } from '../context.js';
import type { Runner } from '../runner.js';

export function registerContextCommands(program: Command, run: Runner): void {
  const ctx = program.command('context').description('choose the Store later commands use');
  useCommand(ctx, run);
  showCommand(ctx, run);
}

function useCommand(ctx: Command, run: Runner): void {
  ctx
    .command('use')
    .description('record the Store in the user-wide context file, or with --project in ./.layerfs/context.json (give it with --store PATH)')
    .option('--project', 'only for commands run below this directory')
    .action((opts: { project?: boolean }) =>
      run((out, g) => {
        if (!g.store) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'context use needs --store PATH', { argument: '--store', hint: 'layerfs context use --store PATH [--project]' });
        const c = Client.connect(g.store, { readonly: true });
        const path = c.storePath;
        c.close();
        const file = opts.project ? writeProjectContext('.', { store: path }) : writeContext({ store: path });
        out.result({ outcome: 'Updated', context: file, store: path }, () => `using Store ${path} (recorded in ${file})`);
      })(),
    );
}

function showCommand(ctx: Command, run: Runner): void {
  ctx
    .command('show')
    .description('print the Store commands here use, and why')
    .action(() =>
      run((out, g) => {
        const c = chooseStore(g.store);
        out.result({ context: contextPath(), store: c?.store ?? null, via: c?.via ?? null }, () =>
          c ? `store ${c.store}
via ${c.via}` : `no Store selected (no --store, no $LAYERFS_STORE, no .layerfs/ above here, no context in ${contextPath()})`,
        );
      })(),
    );
}
