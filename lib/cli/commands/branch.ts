/** branch fork | diff | delete | rename: writable lines forked from a Layer or a Commit. */
import type { Command } from 'commander';
import type { Client } from '../../sdk/index.js';
import { usage } from '../args.js';
import { diffPageLines, short } from '../output.js';
import { withClient, type ExitState, type Runner } from '../runner.js';

export function registerBranchCommands(program: Command, run: Runner, state: ExitState): void {
  const branch = program.command('branch').description('Branches: writable lines forked from a Layer or a Commit');
  forkCommand(branch, run);
  diffCommand(branch, run);
  deleteCommand(branch, run, state);
  renameCommand(branch, run);
}

function forkCommand(branch: Command, run: Runner): void {
  branch
    .command('fork')
    .description('fork a Branch from a Layer, or from a Commit of another Branch (copies no data)')
    .requiredOption('--name <name>', 'Branch name')
    .option('--layer <layer>', 'fork from this Layer (id, prefix, LayerStack name for its head, or a checkpoint taken before any Commit)')
    .option('--branch <branch>', 'fork from a Commit of this Branch')
    .option('--commit <commit>', 'the Commit (with --branch), or a checkpoint name (its Branch is implied)')
    .action((opts: { name: string; layer?: string; branch?: string; commit?: string }) =>
      run(async (out, g) => {
        const b = await withClient(g.store, (c) => {
          if (opts.layer !== undefined && opts.branch === undefined && opts.commit === undefined) return c.forkBranch({ name: opts.name, layer: opts.layer });
          if (opts.layer === undefined && opts.commit !== undefined) return c.forkBranch({ name: opts.name, commit: opts.commit, ...(opts.branch !== undefined ? { branch: opts.branch } : {}) });
          throw usage('give either --layer LAYER, or --branch BRANCH --commit COMMIT, or --commit CHECKPOINT');
        });
        out.result({ outcome: 'Created', branch: b }, () => `created Branch ${b.name} ${b.id} at ${b.headCommitId ? `Commit ${short(b.headCommitId)}` : `Layer ${short(b.baseLayerId)}`}`);
      })(),
    );
}

function diffCommand(branch: Command, run: Runner): void {
  branch
    .command('diff')
    .description('differences between two Commits of a Branch, or between the Branch and a Layer')
    .requiredOption('--branch <branch>', 'the Branch')
    .option('--from <commit>', 'older Commit')
    .option('--to <commit>', 'newer Commit (default: the Branch head)')
    .option('--layer <layer>', 'compare this Layer with the Branch state')
    .option('--after <cursor>', 'continue a long listing')
    .option('--limit <n>', 'entries per page', (v) => Number(v))
    .action((opts: { branch: string; from?: string; to?: string; layer?: string; after?: string; limit?: number }) =>
      run(async (out, g) => {
        const page = await withClient(
          g.store,
          (c: Client) => {
            c.branch(opts.branch);
            // --branch names a Branch: prefixed, a checkpoint of the same name cannot be meant.
            const branchRef = `branch:${opts.branch}`;
            if (opts.layer !== undefined) return c.diff(opts.layer, branchRef, opts);
            if (opts.from === undefined) throw usage('give --from COMMIT (and optionally --to COMMIT), or --layer LAYER');
            return c.diff(opts.from, opts.to ?? branchRef, opts);
          },
          true,
        );
        out.result(page, () => diffPageLines(page));
      })(),
    );
}

function deleteCommand(branch: Command, run: Runner, state: ExitState): void {
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
}

function renameCommand(branch: Command, run: Runner): void {
  branch
    .command('rename <branch> <name>')
    .description('rename a Branch (its id, Commits and Workspaces stay)')
    .action((ref: string, name: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.renameBranch(ref, name));
        out.result(r, () => `renamed Branch ${r.previousName} to ${r.branch.name} (${r.branch.id})`);
      })(),
    );
}
