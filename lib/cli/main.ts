/**
 * The `layerfs` command. It parses argv (commander), calls the SDK and prints; it holds no
 * product logic of its own.
 */
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Out } from './output.js';
import { registerStoreCommands } from './commands/db.js';
import { registerStateCommands } from './commands/state.js';
import { registerBranchCommands } from './commands/branch.js';
import { registerWorkspaceCommands } from './commands/workspace.js';
import { registerReconcileCommands } from './commands/reconcile.js';
import { registerMonitorCommands } from './commands/monitor.js';
import { registerDaemonCommands } from './commands/daemon.js';

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

export interface Globals {
  json: boolean;
  store?: string;
}

export function buildProgram(state: { code: number }): Command {
  const program = new Command('layerfs')
    .description('A content-addressed, branchable time machine for agent workspaces, in one SQLite file.')
    .version(`layerfs ${packageVersion()}`, '-V, --version')
    .option('--json', 'print one JSON object as the result')
    .option('--store <path>', 'the Store to use (overrides the context)')
    .showHelpAfterError()
    .exitOverride();
  const globals = (): Globals => program.opts<Globals>();
  const run = (fn: (out: Out, g: Globals) => Promise<void> | void) => async () => {
    const g = globals();
    const out = new Out(Boolean(g.json));
    try {
      await fn(out, g);
    } catch (e) {
      state.code = out.error(e);
    }
  };
  registerStoreCommands(program, run, state);
  registerStateCommands(program, run, state);
  registerBranchCommands(program, run, state);
  registerWorkspaceCommands(program, run, state);
  registerReconcileCommands(program, run, state);
  registerMonitorCommands(program, run);
  registerDaemonCommands(program, run, state);
  return program;
}

export type Runner = (fn: (out: Out, g: Globals) => Promise<void> | void) => () => Promise<void>;

export async function main(argv: string[]): Promise<void> {
  const state = { code: 0 };
  const program = buildProgram(state);
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      return;
    }
    throw e;
  }
  process.exitCode = state.code;
}
