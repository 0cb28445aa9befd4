/** branch, log, layerstack add/diff and the history queries. */
import type { Command } from 'commander';
import { LayerFsError, type Client, type DiffPage } from '../../sdk/index.js';
import type { Runner } from '../main.js';
import { quoteName } from '../output.js';
import { withClient } from './db.js';

const short = (id: string | null) => (id ? id.slice(0, 12) : '-');

function printDiff(page: DiffPage): string[] {
  const letter = { added: 'A', deleted: 'D', modified: 'M', renamed: 'R' } as const;
  const lines = page.entries.map((e) => `${letter[e.change]}\t${e.oldPath !== undefined ? `${quoteName(e.oldPathBytes ?? e.oldPath)} -> ` : ''}${quoteName(e.pathBytes)}${e.fields.length ? `\t(${e.fields.join(',')})` : ''}`);
  if (page.next) lines.push(`… ${page.total - page.entries.length} more; continue with --after ${page.next}`);
  return lines;
}

function diffAction(out: { result: (v: unknown, h: () => string | string[]) => void }, page: DiffPage): void {
  out.result(page, () => printDiff(page));
}

export function registerBranchCommands(program: Command, run: Runner, state: { code: number }): void {
  const branch = program.command('branch').description('Branches: writable lines forked from a Layer or a Commit');
  branch
    .command('fork')
    .description('fork a Branch from a Layer, or from a Commit of another Branch (copies no data)')
    .requiredOption('--name <name>', 'Branch name')
    .option('--layer <layer>', 'fork from this Layer (id, prefix, or LayerStack name for its head)')
    .option('--branch <branch>', 'fork from a Commit of this Branch')
    .option('--commit <commit>', 'the Commit (with --branch)')
    .action((opts: { name: string; layer?: string; branch?: string; commit?: string }) =>
      run(async (out, g) => {
        const b = await withClient(g.store, (c) => {
          if (opts.layer !== undefined && opts.branch === undefined && opts.commit === undefined) return c.forkBranch({ name: opts.name, layer: opts.layer });
          if (opts.layer === undefined && opts.branch !== undefined && opts.commit !== undefined) return c.forkBranch({ name: opts.name, branch: opts.branch, commit: opts.commit });
          throw usage('give either --layer LAYER, or --branch BRANCH --commit COMMIT');
        });
        out.result({ outcome: 'Created', branch: b }, () => `created Branch ${b.name} ${b.id} at ${b.headCommitId ? `Commit ${short(b.headCommitId)}` : `Layer ${short(b.baseLayerId)}`}`);
      })(),
    );
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
            if (opts.layer !== undefined) return c.diff(opts.layer, opts.branch, opts);
            if (opts.from === undefined) throw usage('give --from COMMIT (and optionally --to COMMIT), or --layer LAYER');
            return c.diff(opts.from, opts.to ?? opts.branch, opts);
          },
          true,
        );
        diffAction(out, page);
      })(),
    );

  program
    .command('log <branch> [path...]')
    .usage('[options] <branch> [-- path...]')
    .description("a Branch's Commits, newest first, one line each (id, message); with -- PATH only those that changed it")
    .option('-n, --limit <n>', 'at most n Commits', (v) => Number(v))
    .action((name: string, paths: string[], opts: { limit?: number }) =>
      run(async (out, g) => {
        if (paths.length > 1) throw usage('give at most one path after --');
        const commits = await withClient(g.store, (c) => c.log(name, { limit: opts.limit, path: paths[0] }), true);
        out.result({ commits }, () => commits.map((c) => `${c.id.slice(0, 12)} ${oneLine(c.message) || '(no message)'}${c.pruned ? ' (pruned)' : ''}`));
      })(),
    );

  const stack = program.commands.find((c) => c.name() === 'layerstack')!;
  stack
    .command('add <branch>')
    .description('publish the Branch head as the next Layer (Added | UpToDate | NoChanges | Conflicted | HeadMoved); reconciles with a LayerStack that moved on')
    .option('--expect-head <layer>', 'refuse (HeadMoved) unless the LayerStack head is this Layer')
    .option('--strict', 'answer HeadMoved instead of reconciling when the LayerStack moved on')
    .option('--resolve-at <dir>', 'where a Conflicted add puts its resolution Workspace (default: beside the Store)')
    .action((name: string, opts: { expectHead?: string; strict?: boolean; resolveAt?: string }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.add(name, { expectedHead: opts.expectHead, strict: opts.strict, resolveAt: opts.resolveAt }));
        out.result(r, () => {
          switch (r.outcome) {
            case 'Added':
              if (r.reconciled) return [`ADDED Layer ${r.layer.id} (${r.layer.layerStack}#${r.layer.seq}) previous=${short(r.previousHead)}, reconciled with the moved LayerStack (${r.reconciled.merged.length} merged path(s), ${r.reconciled.ms.toFixed(1)} ms)`, ...r.reconciled.merged.map((p) => `  merged ${p}`)];
              return `ADDED Layer ${r.layer.id} (${r.layer.layerStack}#${r.layer.seq}) previous=${short(r.previousHead)}`;
            case 'Conflicted':
              return [
                `CONFLICTED head=${short(r.head)}: nothing was added; ${r.conflicts.length} conflict(s)`,
                ...r.conflicts.map((c) => `  ${c.id} ${c.kind} ${c.path}: ${c.message}`),
                `resolution Workspace ${r.resolutionWorkspace.id} at ${r.resolutionWorkspace.path} (Branch ${r.resolutionWorkspace.branch})`,
                'resolve there, commit it, then `layerfs layerstack add ' + r.resolutionWorkspace.branch + '`',
              ];
            case 'UpToDate':
              return `UP_TO_DATE already added as Layer ${r.layer.id}`;
            case 'NoChanges':
              return `NO_CHANGES the Branch state equals the head ${short(r.head)}`;
            default:
              return [
                `HEAD_MOVED the LayerStack head is ${short(r.actual)}, not the expected ${short(r.expected)}; nothing was added`,
                '  next: look at the new head (layerfs query layers), then run add again with --expect-head set to it',
              ];
          }
        });
        if (r.outcome === 'HeadMoved' || r.outcome === 'Conflicted') state.code = 3;
      })(),
    );
  stack
    .command('diff')
    .description('differences between two Layers')
    .requiredOption('--from <layer>', 'older Layer')
    .requiredOption('--to <layer>', 'newer Layer')
    .option('--after <cursor>', 'continue a long listing')
    .option('--limit <n>', 'entries per page', (v) => Number(v))
    .action((opts: { from: string; to: string; after?: string; limit?: number }) =>
      run(async (out, g) => diffAction(out, await withClient(g.store, (c) => c.diff(opts.from, opts.to, opts), true)))(),
    );

  const q = program.commands.find((c) => c.name() === 'query')!;
  q.command('branches')
    .description('list Branches')
    .option('--layerstack <name>', 'only this LayerStack')
    .action((opts: { layerstack?: string }) =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.branches({ layerStack: opts.layerstack }), true);
        out.result({ branches: rows }, () => rows.map((b) => `${b.name}\t${b.id}\t${b.layerStack}\thead ${short(b.headCommitId)}\tbase ${short(b.baseLayerId)}`));
      })(),
    );
  q.command('commits')
    .description('list Commits, newest first')
    .option('--branch <branch>', 'only this Branch')
    .action((opts: { branch?: string }) =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.commits({ branch: opts.branch }), true);
        out.result({ commits: rows }, () => rows.map((c) => `${c.id}\t${c.createdAt}\tparent ${short(c.parentCommitId)}${c.pruned ? '\tpruned' : ''}`));
      })(),
    );
  q.command('workspaces')
    .description('list Workspaces')
    .option('--branch <branch>', 'only this Branch')
    .action((opts: { branch?: string }) =>
      run(async (out, g) => {
        const rows = await withClient(g.store, (c) => c.workspaces({ branch: opts.branch }), true);
        out.result({ workspaces: rows }, () => rows.map((w) => `${w.id}\t${w.branch}\t${w.projection}\t${w.state}\t${w.path}`));
      })(),
    );
}

function usage(message: string): LayerFsError {
  return new LayerFsError('ERR_INVALID_ARGUMENT', message);
}

/** A message's first line, as `git log --oneline` shows it. */
function oneLine(message: string): string {
  return message.split('\n', 1)[0]!.trim();
}
