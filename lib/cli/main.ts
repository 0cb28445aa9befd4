/**
 * The `layerfs` command. It parses argv (commander), calls the SDK and prints; it holds no
 * product logic of its own. `main` (start.ts) loads only the module of the command it runs;
 * `buildProgram` is the whole command tree at once, for tools that walk it.
 */
import type { Command } from 'commander';
import { GROUPS, type GroupName, type Register } from './groups.js';
import { packageVersion, rootProgram } from './program.js';
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

export { main } from './start.js';

/** Each group's register function, loaded now (the table in groups.ts loads them on demand). */
const REGISTER: Record<GroupName, Register> = {
  init: registerInitCommand,
  db: registerDbCommands,
  context: registerContextCommands,
  verify: registerVerifyCommand,
  layerstack: registerLayerStackCommands,
  query: registerQueryCommands,
  ls: registerLsCommand,
  cat: registerCatCommand,
  export: registerExportCommand,
  branch: registerBranchCommands,
  log: registerLogCommand,
  workspace: registerWorkspaceCommands,
  monitor: registerMonitorCommands,
  daemon: registerDaemonCommands,
  sandbox: registerSandboxCommands,
  tour: registerTourCommand,
  remote: registerRemoteCommands,
  rewind: registerRewindCommands,
  mcp: registerMcpCommands,
  patch: registerPatchCommands,
  grep: registerGrepCommand,
  pin: registerPinCommands,
  retention: registerRetentionCommands,
};

/** The whole command tree, every group's module loaded, in the order `layerfs --help` lists them. */
export function buildProgram(state: ExitState): Command {
  const program = rootProgram();
  const run = makeRunner(program, state);
  const version = packageVersion();
  for (const name of Object.keys(GROUPS) as GroupName[]) REGISTER[name](program, run, state, version);
  return program;
}
