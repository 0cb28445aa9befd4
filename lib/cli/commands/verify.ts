/** verify: re-hash everything reachable; exit 1 on any fault. */
import type { Command } from 'commander';
import { formatBytes } from '../output.js';
import { barsWanted, verifyProgress } from '../progress.js';
import { withClient, type ExitState, type Runner } from '../runner.js';

export function registerVerifyCommand(program: Command, run: Runner, state: ExitState): void {
  program
    .command('verify')
    .description('re-hash everything reachable from every state; exits 1 on any fault')
    .action(() =>
      run(async (out, g) => {
        const bar = verifyProgress(barsWanted(g));
        const r = await withClient(g.store, (c) => c.verify({ onProgress: bar.update }), true).finally(bar.stop);
        out.result(r, () => {
          const lines = [`${r.ok ? 'ok' : 'DAMAGED'}: ${r.states} states, ${r.objectsChecked} objects, ${formatBytes(r.bytesChecked)} re-hashed; sqlite ${r.sqliteCheck}`];
          for (const d of r.damaged) lines.push(`  damaged ${d.objectId}: ${d.message}; reached from ${d.states.join(', ')}`);
          return lines;
        });
        if (!r.ok) state.code = 1;
      })(),
    );
}
