/** layerstack init | add | diff | delete: the shared, linear histories of Layers. */
import type { Command } from 'commander';
import { createReadStream } from 'node:fs';
import { LayerFsError, type AddResult } from '../../sdk/index.js';
import { collect } from '../args.js';
import { diffPageLines, formatBytes, quoteName, short, treeCounts } from '../output.js';
import { barsWanted, importProgress } from '../progress.js';
import { withClient, type ExitState, type Runner } from '../runner.js';

export function registerLayerStackCommands(program: Command, run: Runner, state: ExitState): void {
  const stack = program.command('layerstack').description('LayerStacks: shared, linear histories of Layers');
  initCommand(stack, run);
  addCommand(stack, run, state);
  diffCommand(stack, run);
  deleteCommand(stack, run);
}

function initCommand(stack: Command, run: Runner): void {
  stack
    .command('init [directory]')
    .description('create a LayerStack whose genesis Layer is empty, imported from a directory, or from a tar archive')
    .requiredOption('--name <name>', 'LayerStack name')
    .option('--empty', 'start from an empty root')
    .option('--exclude <glob>', 'leave out paths matching this gitignore pattern (repeatable; after the directory\'s .layerfsignore)', collect)
    .option('--from-tar <file>', "import a tar archive (ustar, pax or GNU; '-' reads stdin)")
    .action((directory: string | undefined, opts: { name: string; empty?: boolean; exclude?: string[]; fromTar?: string }) =>
      run(async (out, g) => {
        if (opts.fromTar !== undefined && (directory !== undefined || opts.empty)) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give a directory, --from-tar or --empty, only one');
        const bar = importProgress(barsWanted(g) && (directory !== undefined || opts.fromTar !== undefined));
        const r = await withClient(g.store, (c) =>
          opts.fromTar !== undefined
            ? c.initLayerStackFromTar({ name: opts.name, tar: opts.fromTar === '-' ? process.stdin : createReadStream(opts.fromTar), onProgress: bar.update })
            : c.initLayerStack({ name: opts.name, source: directory, empty: opts.empty ?? directory === undefined, exclude: opts.exclude, onProgress: bar.update }),
        ).finally(bar.stop);
        out.result(r, () => {
          const lines = [
            `created LayerStack ${r.layerStack.name} ${r.layerStack.id}`,
            `genesis Layer ${r.layer.id}`,
            `  ${treeCounts(r)}, ${formatBytes(r.bytes)} in ${(r.ms / 1000).toFixed(2)} s; ${r.objectsInserted} objects stored, ${r.objectsReused} reused`,
          ];
          for (const s of r.skipped) lines.push(`  skipped socket ${quoteName(s)}`);
          return lines;
        });
      })(),
    );
}

function addCommand(stack: Command, run: Runner, state: ExitState): void {
  stack
    .command('add <branch>')
    .description('publish the Branch head as the next Layer (Added | UpToDate | NoChanges | Conflicted | HeadMoved); reconciles with a LayerStack that moved on')
    .option('--expect-head <layer>', 'refuse (HeadMoved) unless the LayerStack head is this Layer')
    .option('--strict', 'answer HeadMoved instead of reconciling when the LayerStack moved on')
    .option('--resolve-at <dir>', 'where a Conflicted add puts its resolution Workspace (default: beside the Store)')
    .action((name: string, opts: { expectHead?: string; strict?: boolean; resolveAt?: string }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.add(name, { expectedHead: opts.expectHead, strict: opts.strict, resolveAt: opts.resolveAt }));
        out.result(r, () => addLines(r));
        if (r.outcome === 'HeadMoved' || r.outcome === 'Conflicted') state.code = 3;
      })(),
    );
}

function addLines(r: AddResult): string | string[] {
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
}

function diffCommand(stack: Command, run: Runner): void {
  stack
    .command('diff')
    .description('differences between two Layers')
    .requiredOption('--from <layer>', 'older Layer')
    .requiredOption('--to <layer>', 'newer Layer')
    .option('--after <cursor>', 'continue a long listing')
    .option('--limit <n>', 'entries per page', (v) => Number(v))
    .action((opts: { from: string; to: string; after?: string; limit?: number }) =>
      run(async (out, g) => {
        const page = await withClient(g.store, (c) => c.diff(opts.from, opts.to, opts), true);
        out.result(page, () => diffPageLines(page));
      })(),
    );
}

function deleteCommand(stack: Command, run: Runner): void {
  stack
    .command('delete <layerstack>')
    .description('delete a LayerStack with its Layers, Branches and Commits (refuses while Workspaces are open)')
    .action((name: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.deleteLayerStack(name));
        out.result(r, () => `deleted LayerStack ${r.layerStack} ${r.id} at ${r.deletedAt}: ${r.layers} Layers, ${r.branches.length} Branches${r.branches.length ? ` (${r.branches.join(', ')})` : ''}, ${r.commits} Commits`);
      })(),
    );
}
