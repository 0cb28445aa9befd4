/**
 * The `layerfs` command as the bin runs it: the program with every command of the help (from
 * the light table in groups.ts), but only the module of the command being run loaded, so
 * `layerfs --version` or `layerfs cat` does not load what `mcp`, `remote` or `sandbox` need; a
 * plain `layerfs cat STATE PATH` does not load commander either (plain-cat.ts).
 */
import type { Command } from 'commander';
import { setFlagsFromString } from 'node:v8';
import { GROUPS, groupFor, type CommandGroup, type GroupName } from './groups.js';
import { plainCat } from './plain-cat.js';
import type { ExitState } from './runner.js';

/** A command as `--help` lists it, standing in for one whose module is not loaded. */
function placeholder(program: Command, group: CommandGroup, Option: typeof import('commander').Option): void {
  for (const line of group.commands) {
    const cmd = program.command(line.spec).description(line.description);
    // Only the count shows (`[options]`); groupFor() loads a command's module before it runs.
    if (line.options) cmd.addOption(new Option('--options').hideHelp());
    cmd.action(() => {
      throw new Error(`layerfs: the module of \`${cmd.name()}\` was not loaded`);
    });
  }
}

/** The program for `args`: the wanted group's module (or every one) loaded, the rest placeholders. */
export async function programFor(args: string[], state: ExitState): Promise<Command> {
  // Loaded here, not on import: a plain `cat` (main) never loads commander.
  const { Option } = await import('commander');
  const { packageVersion, rootProgram } = await import('./program.js');
  const program = rootProgram();
  const wanted = groupFor(args);
  const run = wanted === undefined ? undefined : (await import('./runner.js')).makeRunner(program, state);
  const version = packageVersion();
  for (const [name, group] of Object.entries(GROUPS) as [GroupName, CommandGroup][]) {
    if (run && (wanted === 'all' || wanted === name)) (await group.load())(program, run, state, version);
    else placeholder(program, group, Option);
  }
  return program;
}

/**
 * How far V8 lets the old generation grow past what the last full collection kept, percent. By
 * default it picks up to 4×: a whole-tree commit keeps ~45 MiB live and let its heap reach
 * ~100 MiB of mostly garbage before collecting, which set the command's peak resident set
 * (266–318 MiB against 244–249 MiB at 40 %, for about 3 % more CPU; docs/DECISIONS.md, "A command's
 * heap grows by 40 % between full collections"). V8 reads the flag at each collection, so
 * setting it once the process runs takes effect; the mount daemon gets the same on its command
 * line (fuse/budget.ts). Kept here rather than imported, so that starting the command loads no
 * module beyond its own (test/cli/lazy-start.test.ts); test/cli/heap-growth.test.ts holds the two equal.
 */
export const HEAP_GROWING_PERCENT = 40;

export async function main(argv: string[]): Promise<void> {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  const cat = plainCat(argv.slice(2));
  if (cat) return (await import('./plain-cat-entry.js')).runPlainCat(cat);
  const state = { code: 0 };
  const { runProgram } = await import('./program.js');
  await runProgram(await programFor(argv.slice(2), state), argv, state);
}
