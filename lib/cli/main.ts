/**
 * The `layerfs` command. It parses argv (commander), calls the SDK and prints; it holds no
 * product logic of its own.
 */
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LayerFsError } from '../sdk/index.js';
import { toJson } from './output.js';
import { makeRunner, type ExitState } from './runner.js';
import { registerInitCommand } from './commands/init.js';
import { registerDbCommands } from './commands/db.js';
import { registerContextCommands } from './commands/context.js';
import { registerVerifyCommand } from './commands/verify.js';
import { registerLayerStackCommands } from './commands/layerstack.js';
import { registerQueryCommands } from './commands/query.js';
import { registerLsCommand } from './commands/ls.js';
import { registerCatCommand } from './commands/cat.js';
import { registerExportCommand } from './commands/export.js';
import { registerBranchCommands } from './commands/branch.js';
import { registerLogCommand } from './commands/log.js';
import { registerWorkspaceCommands } from './commands/workspace.js';
import { registerMonitorCommands } from './commands/monitor.js';
import { registerDaemonCommands } from './commands/daemon.js';
import { registerSandboxCommands } from './commands/sandbox.js';
import { registerTourCommand } from './commands/tour.js';
import { registerRemoteCommands } from './commands/remote.js';
import { registerRewindCommands } from './commands/rewind.js';
import { registerMcpCommands } from './commands/mcp.js';
import { registerPatchCommands } from './commands/patch.js';
import { registerGrepCommand } from './commands/grep.js';
import { registerPinCommands } from './commands/pin.js';
import { registerRetentionCommands } from './commands/retention.js';

function packageVersion(): string {
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(fileURLToPath(new URL(rel, import.meta.url)), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'layerfs' && pkg.version) return pkg.version;
    } catch {
      /* try the next location: sources and compiled files sit at different depths */
    }
  }
  return '0.0.0';
}

/**
 * The command tree. Each file registers one group (or one top-level command) and nothing else;
 * the order here is the order `layerfs --help` lists them in.
 */
export function buildProgram(state: ExitState): Command {
  const program = new Command('layerfs')
    .description('A content-addressed, branchable time machine for agent workspaces, in one SQLite file.')
    .version(`layerfs ${packageVersion()}`, '-V, --version')
    .option('--json', 'print one JSON object as the result')
    .option('--store <path>', 'the Store to use (else $LAYERFS_STORE, the nearest .layerfs/ upward, the context file)')
    .option('-q, --quiet', 'no progress bars')
    .showHelpAfterError()
    .exitOverride();
  const run = makeRunner(program, state);
  registerInitCommand(program, run);
  registerDbCommands(program, run);
  registerContextCommands(program, run);
  registerVerifyCommand(program, run, state);
  registerLayerStackCommands(program, run, state);
  registerQueryCommands(program, run);
  registerLsCommand(program, run);
  registerCatCommand(program, run);
  registerExportCommand(program, run);
  registerBranchCommands(program, run, state);
  registerLogCommand(program, run);
  registerWorkspaceCommands(program, run, state);
  registerMonitorCommands(program, run);
  registerDaemonCommands(program, run, state);
  registerSandboxCommands(program, run, state);
  registerTourCommand(program, run);
  registerRemoteCommands(program, run, state);
  registerRewindCommands(program, run);
  registerMcpCommands(program, run, packageVersion());
  registerPatchCommands(program, run, state);
  registerGrepCommand(program, run, state);
  registerPinCommands(program, run);
  registerRetentionCommands(program, run);
  return program;
}

/** --json given before any `--` (commander has not parsed yet when a usage error is printed). */
function wantsJson(argv: string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--json');
}

/** Commander's usage errors in every subcommand: with --json, kept for one JSON error on stdout. */
function quietUsage(cmd: Command, sink: string[]): void {
  cmd.configureOutput({ writeErr: (s) => sink.push(s), outputError: (s) => sink.push(s) });
  for (const sub of cmd.commands) quietUsage(sub, sink);
}

/**
 * A reader that goes away (`layerfs cat … | head`) ends the command quietly, like cat or git:
 * the output nobody reads is dropped and the exit is clean. Nothing is lost: results are printed
 * after the operation has finished.
 */
function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw e;
    });
  }
}

export async function main(argv: string[]): Promise<void> {
  endQuietlyOnClosedPipe();
  const state = { code: 0 };
  const program = buildProgram(state);
  const json = wantsJson(argv.slice(2));
  const usage: string[] = [];
  if (json) quietUsage(program, usage);
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      if (json && e.exitCode !== 0) {
        const message = e.message.replace(/^error: /, '');
        const error = new LayerFsError('ERR_USAGE', message, { hint: 'see `layerfs --help` or `layerfs COMMAND --help`' });
        process.stdout.write(toJson({ error: error.toJSON() }) + '\n');
        process.stderr.write(`layerfs: ${message} [ERR_USAGE]\n`);
      } else if (json) process.stdout.write(usage.join(''));
      return;
    }
    throw e;
  }
  process.exitCode = state.code;
}
