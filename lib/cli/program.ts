/**
 * The program itself: its global options and version, and how it runs a parsed command line
 * (usage errors, --json, a closed pipe, the exit code). Light: it loads no command and no SDK.
 */
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LayerFsError } from '../sdk/errors.js';
import { endQuietlyOnClosedPipe, toJson } from './output.js';
import type { ExitState } from './runner.js';

export function packageVersion(): string {
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

/** The program with its global options and no commands yet. */
export function rootProgram(): Command {
  return new Command('layerfs')
    .description('A content-addressed, branchable time machine for agent workspaces, in one SQLite file.')
    .version(`layerfs ${packageVersion()}`, '-V, --version')
    .option('--json', 'print one JSON object as the result')
    .option('--store <path>', 'the Store to use (else $LAYERFS_STORE, the nearest .layerfs/ upward, the context file)')
    .option('-q, --quiet', 'no progress bars')
    .showHelpAfterError()
    .exitOverride();
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

/** Runs `argv` against `program` (its commands registered); sets the process exit code. */
export async function runProgram(program: Command, argv: string[], state: ExitState): Promise<void> {
  endQuietlyOnClosedPipe();
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
