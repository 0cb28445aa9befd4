/**
 * workspace create | status | exec | shell | output | stop | commit | end | conflicts | resolve |
 * update | restore | diff: ephemeral writable views of a Branch head, from creation to commit.
 */
import type { Command } from 'commander';
import { LayerFsError, type CommitResult, type ExecutionInfo, type ExportProgress, type ShellSession } from '../../sdk/index.js';
import { tuneMemoryForCommand } from '../../sdk/process-memory.js';
import { collect, parseMetadata } from '../args.js';
import { CHANGE_LETTER, quoteName, short } from '../output.js';
import { patchOptions, patchRequest, printPatch, type PatchFlags } from '../patches.js';
import { activity, barsWanted, exportProgress, removeProgress } from '../progress.js';
import { withClient, type ExitState, type Runner } from '../runner.js';

/** With no Workspace named, the one containing the working directory (from any subdirectory). */
const here = () => process.cwd();

export function registerWorkspaceCommands(program: Command, run: Runner, state: ExitState): void {
  const ws = program.command('workspace').description('Workspaces: ephemeral writable views of a Branch head');
  createCommand(ws, run);
  statusCommand(ws, run);
  execCommand(ws, run, state);
  shellCommand(ws, run, state);
  outputCommand(ws, run);
  stopCommand(ws, run);
  commitCommand(ws, run, state);
  endCommand(ws, run, state);
  conflictsCommand(ws, run);
  resolveCommand(ws, run);
  updateCommand(ws, run, state);
  restoreCommand(ws, run);
  diffCommand(ws, run);
}

function createCommand(ws: Command, run: Runner): void {
  ws.command('create <branch>')
    .description('create a Workspace of the Branch head in a new or empty directory')
    .requiredOption('--at <dir>', 'the Workspace directory (must be empty or absent)')
    .option('--sandbox <name>', 'run its executions and shells inside this Sandbox (layerfs sandbox create)')
    .option('--projection <kind>', 'fuse (a live mount served by the Store\'s daemon), materialize (files written into the directory) or auto (fuse when this machine can mount); default $LAYERFS_PROJECTION, else auto')
    .action((branch: string, opts: { at: string; projection?: 'materialize' | 'fuse' | 'auto'; sandbox?: string }) =>
      run(async (out, g) => {
        const projection = opts.projection ?? ((process.env.LAYERFS_PROJECTION || 'auto') as 'materialize' | 'fuse' | 'auto');
        const bar = exportProgress(barsWanted(g), 'create: writing files');
        const busy = activity(barsWanted(g), 'create:');
        const onProgress = (p: ExportProgress) => {
          busy.stop();
          bar.update(p);
        };
        const w = await withClient(g.store, (c) => c.createWorkspace(branch, { at: opts.at, projection, sandbox: opts.sandbox, onProgress })).finally(() => {
          bar.stop();
          busy.stop();
        });
        out.result({ outcome: 'Created', workspace: w }, () => `created Workspace ${w.id} of ${w.branch} at ${w.path} (${w.projection}${w.projection === 'fuse' ? `, ${w.state}` : ''})`);
      })(),
    );
}

function statusCommand(ws: Command, run: Runner): void {
  ws.command('status [workspace]')
    .description('what changed since the Workspace last matched its Branch, like git status')
    .action((ref: string | undefined) =>
      run(async (out, g) => {
        const s = await withClient(g.store, (c) => c.workspaceStatus(ref ?? here()), 'unless-writable');
        out.result(s, () => {
          if (s.clean) return ['clean'];
          const lines = s.changes.map((e) => `${CHANGE_LETTER[e.change]}\t${e.oldPath !== undefined ? `${quoteName(e.oldPath)} -> ` : ''}${quoteName(e.path)}`);
          if (s.truncated) lines.push('… (more changes not listed)');
          return lines;
        });
      })(),
    );
}

function execCommand(ws: Command, run: Runner, state: ExitState): void {
  ws.command('exec <workspace> <command...>')
    .description('run a command in the Workspace (write -- before the command); exits with its exit code')
    .option('--detach', 'run in the background and print an execution id')
    .action((ref: string, command: string[], opts: { detach?: boolean }) =>
      run(async (out, g) => {
        if (opts.detach) {
          const e = await withClient(g.store, (c) => c.execDetached(ref, command));
          out.result({ outcome: 'Started', execution: e }, () => e.id);
          return;
        }
        const e = await withClient(g.store, (c) => c.exec(ref, command));
        if (g.json) out.result({ outcome: e.outcome ?? 'Exited', execution: e }, () => []);
        else if (e.outcome) process.stderr.write(`layerfs: ${e.outcome} (Sandbox ${e.sandbox})\n`);
        state.code = e.exitCode ?? 128 + 15;
      })(),
    );
}

/** Connects this process's terminal (raw, resized along) to the shell's PTY until the shell exits. */
async function runShell(s: ShellSession): Promise<ExecutionInfo> {
  const stdin = process.stdin;
  const raw = stdin.isTTY === true;
  if (raw) stdin.setRawMode(true);
  const onResize = () => s.resize(process.stdout.columns, process.stdout.rows);
  if (process.stdout.isTTY) process.stdout.on('resize', onResize);
  const onInput = (b: Buffer) => s.stream.write(b);
  stdin.on('data', onInput);
  s.stream.on('data', (b: Buffer) => process.stdout.write(b));
  try {
    return await s.exited;
  } finally {
    stdin.off('data', onInput);
    stdin.pause();
    if (raw) stdin.setRawMode(false);
    process.stdout.off('resize', onResize);
  }
}

function shellCommand(ws: Command, run: Runner, state: ExitState): void {
  ws.command('shell <workspace>')
    .description('an interactive shell in the Workspace on a terminal of its own (inside its Sandbox when it has one); exits with its exit code')
    .action((ref: string) =>
      run(async (out, g) => {
        const e = await withClient(g.store, (c) => runShell(c.shell(ref, { cols: process.stdout.columns, rows: process.stdout.rows })));
        if (g.json) out.result({ outcome: e.outcome ?? 'Exited', execution: e }, () => []);
        state.code = e.exitCode ?? 128 + 15;
      })(),
    );
}

function outputCommand(ws: Command, run: Runner): void {
  ws.command('output <execution>')
    .description("print an execution's stdout and stderr")
    .option('--follow', 'keep printing until it ends')
    .action((id: string, opts: { follow?: boolean }) =>
      run(async (out, g) => {
        const chunks: Buffer[] = [];
        const info = await withClient(
          g.store,
          (c) => c.executionOutput(id, { follow: opts.follow, write: (b) => (g.json ? chunks.push(b) : process.stdout.write(b)) }),
          true,
        );
        if (g.json) out.result({ execution: info, output: Buffer.concat(chunks).toString('utf8') }, () => []);
      })(),
    );
}

function stopCommand(ws: Command, run: Runner): void {
  ws.command('stop <execution>')
    .description('stop a running execution (SIGTERM, then SIGKILL)')
    .action((id: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.stopExecution(id), true);
        out.result(r, () => `${r.outcome === 'Stopped' ? 'STOPPED' : 'ALREADY_ENDED'} ${r.info.id}`);
      })(),
    );
}

interface CommitFlags {
  message?: string;
  metadata?: string;
  author?: string;
  exclude?: string[];
  strict?: boolean;
}

function commitCommand(ws: Command, run: Runner, state: ExitState): void {
  ws.command('commit [workspace]')
    .description('commit the Workspace (Created | UpToDate | Busy | Conflicted | HeadMoved with --strict); if the head moved, the changes are reconciled with it')
    .option('-m, --message <text>', 'the Commit message')
    .option('--strict', 'answer HeadMoved instead of reconciling when the Branch head moved')
    .option('--metadata <json>', 'a JSON object recorded with the Commit (agent, tool call id, model…)')
    .option('--author <name>', 'who the Commit is by (default: $LAYERFS_AUTHOR, else user@host)')
    .option('--exclude <glob>', 'leave new paths matching this gitignore pattern out of the Commit (repeatable; materialized Workspaces)', collect)
    .action((ref: string | undefined, opts: CommitFlags) =>
      run(async (out, g) => {
        const metadata = opts.metadata === undefined ? undefined : parseMetadata(opts.metadata);
        let branch = 'BRANCH';
        // The process exits after this one commit: glibc as the mount daemon sets it (a lower peak).
        tuneMemoryForCommand();
        const busy = activity(barsWanted(g), 'commit: scanning and storing changes');
        const r = await withClient(g.store, (c) => {
          branch = c.workspace(ref ?? here()).branch;
          return c.commitWorkspace(ref ?? here(), { message: opts.message, metadata, author: opts.author, exclude: opts.exclude, strict: opts.strict });
        }).finally(busy.stop);
        out.result(r, () => commitLines(r, branch));
        if (r.outcome === 'Busy' || r.outcome === 'HeadMoved' || r.outcome === 'Conflicted') state.code = 3;
      })(),
    );
}

function commitLines(r: CommitResult, branch: string): string | string[] {
  switch (r.outcome) {
    case 'Created': {
      const line = `CREATED commit ${r.commit.id} previous=${short(r.previousHead)} (${r.changedPaths} paths, ${r.objectsInserted} objects stored, ${(r.ms / 1000).toFixed(3)} s)`;
      if (!r.reconciled) return line;
      const rc = r.reconciled;
      return [`${line}`, `RECONCILED with the moved head: ${rc.merged.length} merged path(s), ${rc.retries} retries, ${rc.ms.toFixed(1)} ms`, ...rc.merged.map((p) => `  merged ${p}`)];
    }
    case 'Conflicted':
      return [`CONFLICTED head=${short(r.head)}: nothing was published; ${r.conflicts.length} conflict(s)`, ...r.conflicts.map((c) => `  ${c.id} ${c.kind} ${c.path}: ${c.message}`), 'see `layerfs workspace conflicts WS`, then `layerfs workspace resolve WS ID --branch|--layer|--working-tree`'];
    case 'UpToDate':
      return `UP_TO_DATE ${short(r.head)}`;
    case 'Busy':
      return `BUSY executions still running: ${r.executions.join(', ')}`;
    default:
      return [
        `HEAD_MOVED the Branch moved since this Workspace started: expected head ${short(r.expected)}, found ${short(r.actual)}; nothing was committed`,
        `  next: commit again without --strict to reconcile with the new head, or start over from it (layerfs workspace create ${branch} --at NEW_DIR), or end this one with --discard`,
      ];
  }
}

function endCommand(ws: Command, run: Runner, state: ExitState): void {
  ws.command('end [workspace]')
    .description('end the Workspace and remove its files; never commits')
    .option('--discard', 'drop uncommitted changes (and stop running executions)')
    .action((ref: string | undefined, opts: { discard?: boolean }) =>
      run(async (out, g) => {
        const busy = activity(barsWanted(g), 'end: checking for uncommitted changes');
        const bar = removeProgress(barsWanted(g));
        const onProgress = (p: { done: number; total: number }) => {
          busy.stop();
          bar.update(p);
        };
        const r = await withClient(g.store, (c) => c.endWorkspace(ref ?? here(), { discard: opts.discard, onProgress })).finally(() => {
          busy.stop();
          bar.stop();
        });
        out.result(r, () => {
          if (r.outcome === 'Ended') return `ENDED discarded=${r.discarded}${r.kept ? ` kept=${quoteName(r.kept)} (not created by this Workspace here; left in place)` : ''}`;
          if (r.outcome === 'Busy') return [`BUSY executions still running: ${r.executions.join(', ')}`, '  next: wait for them (workspace output ID --follow), stop them (workspace stop ID), or end with --discard'];
          if (r.changes === 0) return [`DIRTY ${r.reason}`, `  next: layerfs workspace end ${ref ?? ''}${ref ? ' ' : ''}--discard (what was not committed is gone with the mount)`];
          return [`DIRTY ${r.changes} uncommitted change${r.changes === 1 ? '' : 's'}; nothing was removed`, '  next: layerfs workspace commit (then end), or end with --discard to drop them'];
        });
        if (r.outcome !== 'Ended') state.code = 3;
      })(),
    );
}

function conflictsCommand(ws: Command, run: Runner): void {
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
            ...(c.ranges ?? []).map((r) => `\tbytes base ${r.base[0]}-${r.base[1]}, head ${r.head[0]}-${r.head[1]}, workspace ${r.workspace[0]}-${r.workspace[1]} (end exclusive)`),
          ]);
        });
      })(),
    );
}

function resolveCommand(ws: Command, run: Runner): void {
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
}

function updateCommand(ws: Command, run: Runner, state: ExitState): void {
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

function restoreCommand(ws: Command, run: Runner): void {
  ws.command('restore <workspace> <path...>')
    .description('take paths back from any state into the Workspace (each subtree becomes the source\'s)')
    .requiredOption('--source <state>', 'the state to take them from')
    .action((ref: string, paths: string[], f: { source: string }) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.restore(ref, { source: f.source, paths }), true);
        out.result(r, () => [...r.changes.map((x) => `${x.change.padEnd(6)} ${x.path}`), `restored ${r.changes.length} paths`]);
      })(),
    );
}

function diffCommand(ws: Command, run: Runner): void {
  patchOptions(
    ws
      .command('diff <workspace> [path...]')
      .usage('[options] <workspace> [-- path...]')
      .description("the Workspace's uncommitted changes: paths (default), --stat, or a git patch with --patch"),
  ).action((ref: string, paths: string[], f: PatchFlags) =>
    run(async (out, g) => {
      const r = await withClient(g.store, (c) => c.workspaceDiff(ref, patchRequest(f, paths)), true);
      await printPatch(out, r, f);
    })(),
  );
}
