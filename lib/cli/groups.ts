/**
 * The command groups, in the order `layerfs --help` lists them: for each, its top-level commands
 * as the help lists them (name, arguments, whether it takes options, description) and how to
 * load the module that registers it. `layerfs CMD` loads only CMD's module; the others stay this
 * light table (test/cli/lazy-start.test.ts checks it matches the modules' own registrations).
 */
import type { Command } from 'commander';
import type { ExitState, Runner } from './runner.js';

/** A group module's register function (each takes the leading parameters it uses). */
export type Register = (program: Command, run: Runner, state: ExitState, version: string) => void;

/** A top-level command as the program's help lists it. */
export interface CommandLine {
  /** Name and arguments, as given to commander's `.command()`. */
  spec: string;
  description: string;
  /** It has options of its own (the help shows `[options]`). */
  options?: true;
}

export interface CommandGroup {
  commands: CommandLine[];
  load: () => Promise<Register>;
}

const c = (spec: string, description: string, options?: true): CommandLine => ({ spec, description, options });

export const GROUPS = {
  init: {
    commands: [c('init [directory]', 'make a Store in DIRECTORY/.layerfs/ (default: here); later commands below it find it, like git')],
    load: async () => (await import('./commands/init.js')).registerInitCommand,
  },
  db: { commands: [c('db', 'create or check a Store file')], load: async () => (await import('./commands/db.js')).registerDbCommands },
  context: { commands: [c('context', 'choose the Store later commands use')], load: async () => (await import('./commands/context.js')).registerContextCommands },
  verify: {
    commands: [c('verify', 're-hash everything reachable from every state; exits 1 on any fault')],
    load: async () => (await import('./commands/verify.js')).registerVerifyCommand,
  },
  layerstack: {
    commands: [c('layerstack', 'LayerStacks: shared, linear histories of Layers')],
    load: async () => (await import('./commands/layerstack.js')).registerLayerStackCommands,
  },
  query: { commands: [c('query', 'list LayerStacks, Layers and more')], load: async () => (await import('./commands/query.js')).registerQueryCommands },
  ls: {
    commands: [c('ls <state> [path]', 'list a directory of a state (a Layer id, prefix or label STACK#SEQ, a Commit, a Branch or a LayerStack name), like ls -l', true)],
    load: async () => (await import('./commands/ls.js')).registerLsCommand,
  },
  cat: {
    commands: [c('cat <state> <path>', "write a file's content from a state to stdout", true)],
    load: async () => (await import('./commands/cat.js')).registerCatCommand,
  },
  export: {
    commands: [c('export <state> [directory]', 'write a state into a new or empty directory, or as a tar archive (--format tar)', true)],
    load: async () => (await import('./commands/export.js')).registerExportCommand,
  },
  branch: {
    commands: [c('branch', 'Branches: writable lines forked from a Layer or a Commit')],
    load: async () => (await import('./commands/branch.js')).registerBranchCommands,
  },
  log: {
    commands: [
      c(
        'log <branch> [path...]',
        "a Branch's Commits (or a checkpoint's: from the Commit it pinned), newest first, one line each (id, message); with -- PATH only those that changed it",
        true,
      ),
    ],
    load: async () => (await import('./commands/log.js')).registerLogCommand,
  },
  workspace: {
    commands: [c('workspace', 'Workspaces: ephemeral writable views of a Branch head')],
    load: async () => (await import('./commands/workspace.js')).registerWorkspaceCommands,
  },
  monitor: { commands: [c('monitor', 'receipts and storage analysis')], load: async () => (await import('./commands/monitor.js')).registerMonitorCommands },
  daemon: {
    commands: [c('daemon', "the Store's mount daemon (serves FUSE Workspaces; starts on demand)")],
    load: async () => (await import('./commands/daemon.js')).registerDaemonCommands,
  },
  sandbox: {
    commands: [c('sandbox', 'Sandboxes: limits, mounts and network for the executions of Workspaces')],
    load: async () => (await import('./commands/sandbox.js')).registerSandboxCommands,
  },
  tour: {
    commands: [
      c('tour [directory]', "the main job in a few seconds: a Store in ./.layerfs/, a directory imported (default: layerfs's docs), a Branch, a Workspace, a Commit, its diff and log"),
    ],
    load: async () => (await import('./commands/tour.js')).registerTourCommand,
  },
  remote: {
    commands: [
      c('remote', 'remotes on PostgreSQL: where push, fetch and clone go'),
      c(
        'push <remoteOrRef> [ref]',
        'push [REMOTE] REF: send a LayerStack (its Layers) or a Branch (its Commits); the remote head moves by compare-and-swap; a stale Branch push reconciles (exit 3 on Conflicted or HeadMoved)',
        true,
      ),
      c('fetch [remote]', "fetch a remote's objects and heads; its states become readable as REMOTE/NAME", true),
      c('clone <url> <path>', 'a new Store at PATH holding what the remote has (recorded as remote origin)', true),
    ],
    load: async () => (await import('./commands/remote.js')).registerRemoteCommands,
  },
  rewind: {
    commands: [
      c(
        'rewind <branch> <to>',
        'publish a new Commit whose files equal an older state (a checkpoint name, a Commit of the Branch, or its base Layer); the head never moves backwards',
        true,
      ),
      c('checkpoint <branch> <name>', "pin the Branch's current state under a name, to rewind to later"),
      c('checkpoints <branch>', "the Branch's checkpoints, oldest first"),
    ],
    load: async () => (await import('./commands/rewind.js')).registerRewindCommands,
  },
  mcp: {
    commands: [c('mcp', 'serve this Store to an agent over the Model Context Protocol: stdio by default, or loopback HTTP with --http (docs/AGENTS.md)', true)],
    load: async () => (await import('./commands/mcp.js')).registerMcpCommands,
  },
  patch: {
    commands: [
      c(
        'apply <state> [path...]',
        "bring a state's changes (relative to --from, default its fork base) into an existing directory or git work tree; nothing is written if any path conflicts",
        true,
      ),
      c('diff <from> <to> [path...]', 'what changed from one state to another: paths (default), --stat, or a git patch with --patch', true),
      c('format-patch <branch>', 'one git mbox patch per Commit (message, author, time), for `git am`', true),
    ],
    load: async () => (await import('./commands/patch.js')).registerPatchCommands,
  },
  grep: {
    commands: [c('grep <pattern> <state> [path...]', "search a state's files without exporting it (path:line:text; exits 1 when nothing matches)", true)],
    load: async () => (await import('./commands/grep.js')).registerGrepCommand,
  },
  pin: {
    commands: [
      c('pin <state>', "keep a state (Layer, Commit, or a Branch's current state) whatever the retention policy"),
      c('unpin <state>', 'remove a pin (the state stays while anything else keeps it)'),
    ],
    load: async () => (await import('./commands/pin.js')).registerPinCommands,
  },
  retention: {
    commands: [c('retention', 'which Commits of each Branch stay reachable')],
    load: async () => (await import('./commands/retention.js')).registerRetentionCommands,
  },
} satisfies Record<string, CommandGroup>;

export type GroupName = keyof typeof GROUPS;

/** The options the program itself takes, as commander reads them before the command name. */
const PROGRAM_FLAGS = new Set(['--json', '-q', '--quiet']);

/**
 * The operands commander will see before dispatching (the command name, and the one after it
 * for `help CMD`), read by the program's own option rules; 'all' for an argv it reads in ways
 * this does not model (combined short flags, an unknown option), so nothing is guessed.
 */
function leadingOperands(args: string[]): string[] | 'all' {
  const operands: string[] = [];
  const done = () => operands.length === 2 || (operands.length === 1 && operands[0] !== 'help');
  for (let i = 0; i < args.length && !done(); i++) {
    const a = args[i]!;
    if (a === '--') return [...operands, ...args.slice(i + 1)];
    if (PROGRAM_FLAGS.has(a) || a.startsWith('--store=')) continue;
    if (a === '--store') i++;
    else if (a === '-V' || a === '--version' || a === '-h' || a === '--help') return operands;
    else if (a.startsWith('-') && a !== '-') return 'all';
    else operands.push(a);
  }
  return operands;
}

/**
 * Which group's module `layerfs ARGS` needs: the group of the command it names (`help CMD`
 * included), none for the program's own help, version or an unknown command (the table answers
 * those), 'all' when unsure.
 */
export function groupFor(args: string[]): GroupName | 'all' | undefined {
  const operands = leadingOperands(args);
  if (operands === 'all') return 'all';
  const name = operands[0] === 'help' ? operands[1] : operands[0];
  if (name === undefined) return undefined;
  for (const [group, g] of Object.entries(GROUPS) as [GroupName, CommandGroup][]) {
    if (g.commands.some((cmd) => cmd.spec.split(' ', 1)[0] === name)) return group;
  }
  return undefined;
}
