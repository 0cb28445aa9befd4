/** branch delete/rename, layerstack delete, pin/unpin, retention and db gc. */
import type { Command } from 'commander';
import { LayerFsError } from '../../sdk/index.js';
import { formatBytes } from '../output.js';
import type { Runner } from '../main.js';
import { withClient } from './db.js';

const short = (id: string | null) => (id ? id.slice(0, 12) : '-');

/** Parses `30d`, `12h`, `90m`, `45s`, `500ms`, `2w`. */
function duration(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d|w)$/.exec(text.trim());
  if (!m) throw new LayerFsError('ERR_INVALID_ARGUMENT', `--older-than must be a number and a unit (ms, s, m, h, d, w), got ${JSON.stringify(text)}`, { argument: '--older-than', hint: 'for example 30d' });
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[m[2] as 'ms'];
}

function count(text: string, flag: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(Number.isSafeInteger(n) && n >= 1)) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${flag} must be a whole number of at least 1, got ${JSON.stringify(text)}`, { argument: flag });
  return n;
}

function showDuration(ms: number | null): string {
  if (ms === null) return '-';
  for (const [unit, n] of [['w', 604_800_000], ['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) if (ms % n === 0 && ms >= n) return `${ms / n}${unit}`;
  return `${ms}ms`;
}

export function registerRetentionCommands(program: Command, run: Runner, state: { code: number }): void {
  const branch = program.commands.find((c) => c.name() === 'branch')!;
  branch
    .command('delete <branch>')
    .description('delete a Branch (refuses while Workspaces are open on it); db gc reclaims what only it kept')
    .option('--force', 'end its clean Workspaces first (Dirty for one with uncommitted changes)')
    .option('--discard', 'with --force: also end Workspaces with uncommitted changes, dropping them')
    .action((name: string, opts: { force?: boolean; discard?: boolean }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.deleteBranch(name, opts));
        out.result(r, () => {
          if (r.outcome === 'Dirty') return `DIRTY Workspace ${short(r.workspace)} has ${r.changes} uncommitted changes: nothing deleted; add --discard to drop them`;
          if (r.outcome === 'Busy') return `BUSY Workspace ${short(r.workspace)} runs ${r.executions.join(', ')}; nothing deleted`;
          return `deleted Branch ${r.branch} ${r.id} (head ${short(r.head)}) at ${r.deletedAt}${r.workspacesEnded.length ? `; ended Workspaces ${r.workspacesEnded.map(short).join(', ')}` : ''}`;
        });
        if (r.outcome !== 'Deleted') state.code = 3;
      })(),
    );
  branch
    .command('rename <branch> <name>')
    .description('rename a Branch (its id, Commits and Workspaces stay)')
    .action((ref: string, name: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.renameBranch(ref, name));
        out.result(r, () => `renamed Branch ${r.previousName} to ${r.branch.name} (${r.branch.id})`);
      })(),
    );

  const stack = program.commands.find((c) => c.name() === 'layerstack')!;
  stack
    .command('delete <layerstack>')
    .description('delete a LayerStack with its Layers, Branches and Commits (refuses while Workspaces are open)')
    .action((name: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.deleteLayerStack(name));
        out.result(r, () => `deleted LayerStack ${r.layerStack} ${r.id} at ${r.deletedAt}: ${r.layers} Layers, ${r.branches.length} Branches${r.branches.length ? ` (${r.branches.join(', ')})` : ''}, ${r.commits} Commits`);
      })(),
    );

  program
    .command('pin <state>')
    .description('keep a state (Layer, Commit, or a Branch\'s current state) whatever the retention policy')
    .action((ref: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.pin(ref));
        out.result(r, () => `${r.outcome === 'Pinned' ? 'pinned' : 'already pinned'} ${r.state}`);
      })(),
    );
  program
    .command('unpin <state>')
    .description('remove a pin (the state stays while anything else keeps it)')
    .action((ref: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.unpin(ref));
        out.result(r, () => `${r.outcome === 'Unpinned' ? 'unpinned' : 'not pinned:'} ${r.state}`);
      })(),
    );

  const q = program.commands.find((c) => c.name() === 'query')!;
  q.command('pins')
    .description('list pinned states')
    .action(() =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.pins(), true);
        out.result({ pins: rows }, () => rows.map((p) => `${p.state}\troot ${short(p.rootId)}\t${p.createdAt}`));
      })(),
    );
  q.command('deleted')
    .description('list deleted Branches and LayerStacks, with when')
    .action(() =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.deleted(), true);
        out.result({ deleted: rows }, () => rows.map((d) => `${d.kind}\t${d.name}\t${d.id}\t${d.layerStack}\thead ${short(d.head)}\tdeleted ${d.deletedAt}`));
      })(),
    );

  const ret = program.command('retention').description('which Commits of each Branch stay reachable');
  ret
    .command('set')
    .description('set the policy: a Commit is pruned once it is beyond the newest N of its Branch and older than DUR')
    .option('--branch-commits <n>', 'keep each Branch\'s newest n Commits ("none" clears the rule)')
    .option('--older-than <dur>', 'keep Commits younger than this, e.g. 30d ("none" clears the rule)')
    .action((opts: { branchCommits?: string; olderThan?: string }) =>
      run(async (out, g) => {
        if (opts.branchCommits === undefined && opts.olderThan === undefined) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give --branch-commits N and/or --older-than DUR');
        const p = {
          branchCommits: opts.branchCommits === undefined ? undefined : opts.branchCommits === 'none' ? null : count(opts.branchCommits, '--branch-commits'),
          olderThanMs: opts.olderThan === undefined ? undefined : opts.olderThan === 'none' ? null : duration(opts.olderThan),
        };
        const r = await withClient(g.store, (c) => c.setRetention(p));
        out.result(r, () => `retention: branch-commits ${r.branchCommits ?? '-'}, older-than ${showDuration(r.olderThanMs)}`);
      })(),
    );
  ret
    .command('show')
    .description('print the policy')
    .action(() =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.retention(), true);
        out.result(r, () => (r.branchCommits === null && r.olderThanMs === null ? 'retention: every Commit is kept' : `retention: branch-commits ${r.branchCommits ?? '-'}, older-than ${showDuration(r.olderThanMs)}`));
      })(),
    );

  const db = program.commands.find((c) => c.name() === 'db')!;
  db.command('gc')
    .description('delete what no kept state reaches (bounded transactions; safe while others read and write)')
    .option('--dry-run', 'report what would be freed; change nothing')
    .option('--vacuum', 'afterwards return free pages to the file system')
    .action((opts: { dryRun?: boolean; vacuum?: boolean }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.gc({ dryRun: opts.dryRun, vacuum: opts.vacuum }), opts.dryRun);
        out.result(r, () => [
          `${r.outcome === 'DryRun' ? 'would delete' : 'deleted'} ${r.outcome === 'DryRun' ? r.garbageObjects : r.deletedObjects} of ${r.objects} objects (${formatBytes(r.garbageBytes)} canonical) from ${r.states} kept states in ${(r.ms / 1000).toFixed(2)} s`,
          `  ${r.outcome === 'DryRun' ? 'would free' : 'freed'} ${formatBytes(r.storedBytesFreed)} stored: ${r.rowsDeleted} rows deleted, ${r.rowsRewritten} rewritten into ${r.rowsWritten}; ${formatBytes(r.garbageBytesKept)} of garbage left in rows mostly live`,
          `  Store ${formatBytes(r.fileBytesBefore)} -> ${formatBytes(r.fileBytesAfter)} (${formatBytes(r.freeBytes)} free pages${r.vacuumMs ? `; vacuum ${(r.vacuumMs / 1000).toFixed(2)} s` : ', reused by later writes; --vacuum returns them'})`,
        ]);
      })(),
    );
}
