/** daemon status | stop: the Store's mount daemon (serves FUSE Workspaces; docs/FUSE.md). */
import type { Command } from 'commander';
import { withClient, type ExitState, type Runner } from '../runner.js';

export function registerDaemonCommands(program: Command, run: Runner, state: ExitState): void {
  const d = program.command('daemon').description("the Store's mount daemon (serves FUSE Workspaces; starts on demand)");
  d.command('status')
    .description('whether the daemon runs, what it serves (pending changes per Workspace) and what its start recovered')
    .action(() =>
      run(async (out, g) => {
        const s = await withClient(g.store, (c) => c.daemonStatus(), true);
        out.result(s ? { running: true, ...s } : { running: false }, () => {
          if (!s) return 'not running';
          const lines = [`running pid ${s.pid} since ${s.startedAt}, ${s.mounts.length} mount(s)`];
          for (const m of s.mounts) {
            const p = m.pending;
            lines.push(`  ${m.workspaceId}\t${m.backend}\t${m.path}\t${m.dirty ? `changed (${p.records} records, ${p.deleted} deleted)` : 'clean'}${m.committing ? ' committing' : ''}`);
          }
          for (const l of s.recovered?.lostUncommitted ?? []) lines.push(`  lost uncommitted work at start: ${l.workspaceId} ${l.path}`);
          return lines;
        });
      })(),
    );
  d.command('stop')
    .description('stop the daemon, unmounting every FUSE Workspace (they become lost: end them with --discard)')
    .option('--discard', 'stop even when Workspaces have uncommitted changes (they are dropped)')
    .action((opts: { discard?: boolean }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.stopDaemon({ discard: opts.discard }), true);
        out.result(r, () => (r.outcome === 'Stopped' ? `STOPPED unmounted ${r.unmounted.length}` : r.outcome === 'NotRunning' ? 'NOT_RUNNING' : `DIRTY uncommitted changes in ${r.workspaces.join(', ')}; use --discard`));
        if (r.outcome === 'Dirty') state.code = 3;
      })(),
    );
}
