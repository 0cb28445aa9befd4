/** workspace create | status | exec | output | stop | commit | end */
import type { Command } from 'commander';
import { LayerFsError, type ExportProgress } from '../../sdk/index.js';
import type { Runner } from '../main.js';
import { quoteName } from '../output.js';
import { activity, barsWanted, exportProgress, removeProgress } from '../progress.js';
import { withClient } from './db.js';
import type { ExecutionInfo, ShellSession } from '../../sdk/index.js';

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

const short = (id: string | null) => (id ? id.slice(0, 12) : '-');
/** With no Workspace named, the one containing the working directory (from any subdirectory). */
const here = () => process.cwd();

export function registerWorkspaceCommands(program: Command, run: Runner, state: { code: number }): void {
  const ws = program.command('workspace').description('Workspaces: ephemeral writable views of a Branch head');
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
  ws.command('status [workspace]')
    .description('what changed since the Workspace last matched its Branch, like git status')
    .action((ref: string | undefined) =>
      run(async (out, g) => {
        const s = await withClient(g.store, (c) => c.workspaceStatus(ref ?? here()), true);
        const letter = { added: 'A', deleted: 'D', modified: 'M', renamed: 'R' } as const;
        out.result(s, () => {
          if (s.clean) return ['clean'];
          const lines = s.changes.map((e) => `${letter[e.change]}\t${e.oldPath !== undefined ? `${quoteName(e.oldPath)} -> ` : ''}${quoteName(e.path)}`);
          if (s.truncated) lines.push('… (more changes not listed)');
          return lines;
        });
      })(),
    );
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
  ws.command('shell <workspace>')
    .description('an interactive shell in the Workspace on a terminal of its own (inside its Sandbox when it has one); exits with its exit code')
    .action((ref: string) =>
      run(async (out, g) => {
        const e = await withClient(g.store, (c) => runShell(c.shell(ref, { cols: process.stdout.columns, rows: process.stdout.rows })));
        if (g.json) out.result({ outcome: e.outcome ?? 'Exited', execution: e }, () => []);
        state.code = e.exitCode ?? 128 + 15;
      })(),
    );
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
  ws.command('stop <execution>')
    .description('stop a running execution (SIGTERM, then SIGKILL)')
    .action((id: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.stopExecution(id), true);
        out.result(r, () => `${r.outcome === 'Stopped' ? 'STOPPED' : 'ALREADY_ENDED'} ${r.info.id}`);
      })(),
    );
  ws.command('commit [workspace]')
    .description('commit the Workspace (Created | UpToDate | Busy | Conflicted | HeadMoved with --strict); if the head moved, the changes are reconciled with it')
    .option('-m, --message <text>', 'the Commit message')
    .option('--strict', 'answer HeadMoved instead of reconciling when the Branch head moved')
    .option('--metadata <json>', 'a JSON object recorded with the Commit (agent, tool call id, model…)')
    .option('--author <name>', 'who the Commit is by (default: $LAYERFS_AUTHOR, else user@host)')
    .option('--exclude <glob>', 'leave new paths matching this gitignore pattern out of the Commit (repeatable; materialized Workspaces)', (v: string, prev: string[] = []) => [...prev, v])
    .action((ref: string | undefined, opts: { message?: string; metadata?: string; author?: string; exclude?: string[]; strict?: boolean }) =>
      run(async (out, g) => {
        const metadata = opts.metadata === undefined ? undefined : parseMetadata(opts.metadata);
        let branch = 'BRANCH';
        const busy = activity(barsWanted(g), 'commit: scanning and storing changes');
        const r = await withClient(g.store, (c) => {
          branch = c.workspace(ref ?? here()).branch;
          return c.commitWorkspace(ref ?? here(), { message: opts.message, metadata, author: opts.author, exclude: opts.exclude, strict: opts.strict });
        }).finally(busy.stop);
        out.result(r, () => {
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
        });
        if (r.outcome === 'Busy' || r.outcome === 'HeadMoved' || r.outcome === 'Conflicted') state.code = 3;
      })(),
    );
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

/** --metadata must be a JSON object; anything else is a usage error, not a stack trace. */
export function parseMetadata(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `--metadata is not valid JSON: ${(e as Error).message}`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new LayerFsError('ERR_INVALID_ARGUMENT', '--metadata must be a JSON object, such as {"tool":"bash","callId":"c17"}');
  return v as Record<string, unknown>;
}
