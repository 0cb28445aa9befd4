/** pin | unpin: keep a state whatever the retention policy. */
import type { Command } from 'commander';
import { withClient, type Runner } from '../runner.js';

export function registerPinCommands(program: Command, run: Runner): void {
  pinCommand(program, run);
  unpinCommand(program, run);
}

function pinCommand(program: Command, run: Runner): void {
  program
    .command('pin <state>')
    .description('keep a state (Layer, Commit, or a Branch\'s current state) whatever the retention policy')
    .action((ref: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.pin(ref));
        out.result(r, () => `${r.outcome === 'Pinned' ? 'pinned' : 'already pinned'} ${r.state}`);
      })(),
    );
}

function unpinCommand(program: Command, run: Runner): void {
  program
    .command('unpin <state>')
    .description('remove a pin (the state stays while anything else keeps it)')
    .action((ref: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.unpin(ref));
        out.result(r, () => `${r.outcome === 'Unpinned' ? 'unpinned' : 'not pinned:'} ${r.state}`);
      })(),
    );
}
