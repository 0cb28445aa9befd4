/**
 * The MCP server's tools, one table entry each: name, description (written for an agent that has
 * no other documentation), input schema and what it runs. A new tool is one more entry.
 */
import { z } from 'zod';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { LayerFsError, type Client, type EntryInfo } from '../../sdk/index.js';
import { deleteInWorkspace, patchInWorkspace, writeInWorkspace } from './files.js';

export interface McpContext {
  client: Client;
  /** The Branch tools use when none is given (`--branch`). */
  branch?: string;
  projection?: 'materialize' | 'fuse';
  /** Workspaces this server opened (the only ones its file tools write into). */
  opened: Set<string>;
  /** The Sandbox run_command's commands run in (`--sandbox`); none: they run unsandboxed. */
  sandbox?: string;
}

export interface ToolDef {
  name: string;
  title: string;
  /** A function when the description depends on how the server was started. */
  description: string | ((ctx: McpContext) => string);
  input: z.ZodRawShape;
  annotations: ToolAnnotations;
  run(ctx: McpContext, args: any): Promise<unknown> | unknown;
}

const READ: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
const WRITE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, openWorldHint: false };

const MAX_READ = 256 * 1024;

const state = z
  .string()
  .min(1)
  .optional()
  .describe('What to look at: a Branch name (its current files), a Commit id, a Layer id, a LayerStack name, or a checkpoint name (the state it pinned). A name that means two things is an error listing prefixed forms such as "checkpoint:NAME" or "branch:NAME" to use instead. Default: the server\'s Branch.');
const branchArg = z.string().min(1).optional().describe("A Branch name. Default: the server's Branch (--branch).");
const metadata = z.record(z.string(), z.unknown()).optional().describe('Free-form JSON object stored with the Commit (tool name, call id, model…).');

function branchOf(ctx: McpContext, given?: string): string {
  const b = given ?? ctx.branch;
  if (!b) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'no Branch given and the server has no default Branch', { hint: 'pass "branch", or start the server with --branch NAME; list_branches shows the names' });
  return b;
}

function stateOf(ctx: McpContext, given?: string): string {
  // The server's Branch, prefixed: a checkpoint of the same name cannot be meant.
  return given ?? `branch:${branchOf(ctx)}`;
}

function entry(e: EntryInfo) {
  return { name: e.name, kind: e.kind, size: e.size, mode: `0${(e.mode & 0o7777).toString(8)}`, ...(e.target !== undefined ? { target: e.target } : {}) };
}

function ownWorkspace(ctx: McpContext, id: string): string {
  if (!ctx.opened.has(id)) {
    throw new LayerFsError('ERR_NOT_FOUND', `no open Workspace ${JSON.stringify(id)} of this server`, { id, hint: 'open one with open_workspace; its id is in the reply' });
  }
  return ctx.client.workspace(id).path;
}

export const TOOLS: ToolDef[] = [
  {
    name: 'list_layerstacks',
    title: 'List LayerStacks',
    description: 'Lists the LayerStacks in the Store: each is a project history (a stack of published Layers). Returns name, id and head Layer id of each.',
    input: {},
    annotations: READ,
    run: (ctx) => ({ layerStacks: ctx.client.layerStacks() }),
  },
  {
    name: 'list_branches',
    title: 'List Branches',
    description: "Lists Branches (named lines of Commits forked from a Layer). Each has a name, its LayerStack, its head Commit id (null before its first Commit) and the root of its current files. Use a Branch name wherever a tool asks for a branch or a state.",
    input: { layer_stack: z.string().optional().describe('Only the Branches of this LayerStack.') },
    annotations: READ,
    run: (ctx, a: { layer_stack?: string }) => ({ branches: ctx.client.branches({ layerStack: a.layer_stack }) }),
  },
  {
    name: 'list_commits',
    title: 'List Commits',
    description: 'Lists Commits newest first: of one Branch, or of every Branch when none is given. Each has id, parent, message, metadata, author and time.',
    input: { branch: z.string().optional().describe('Only this Branch (else every Branch).'), limit: z.number().int().positive().max(1000).default(100) },
    annotations: READ,
    run: (ctx, a: { branch?: string; limit: number }) => ({ commits: ctx.client.commits({ branch: a.branch }).slice(0, a.limit) }),
  },
  {
    name: 'log',
    title: 'Branch history',
    description: "A Branch's Commits newest first (like git log), optionally only those that changed something at or below a path. \"branch\" may also be a checkpoint name: the log then starts at the Commit it pinned.",
    input: { branch: branchArg, path: z.string().optional().describe('Only Commits that touched this path (relative to the root).'), limit: z.number().int().positive().max(1000).default(50) },
    annotations: READ,
    run: (ctx, a: { branch?: string; path?: string; limit: number }) => ({ commits: ctx.client.log(branchOf(ctx, a.branch), { path: a.path, limit: a.limit }) }),
  },
  {
    name: 'fork',
    title: 'Fork a Branch',
    description:
      'Creates a new Branch (copies no data) to try something without touching the original: from another Branch (at its head, or at one of its Commits), or from a Layer / LayerStack head. Names: lowercase letters, digits, ".", "_", "-".',
    input: {
      name: z.string().min(1).describe('The new Branch name, e.g. "try-fix-1".'),
      from: z.string().min(1).optional().describe("A Branch name, a Layer id, a LayerStack name, or a checkpoint name (forks at the state it pinned). Default: the server's Branch."),
      commit: z.string().optional().describe('With a Branch in "from": fork at this Commit of its history instead of its head.'),
    },
    annotations: WRITE,
    run: (ctx, a: { name: string; from?: string; commit?: string }) => {
      const from = a.from ?? branchOf(ctx);
      let branch: ReturnType<Client['branch']> | undefined;
      try {
        branch = ctx.client.branch(from);
      } catch (e) {
        if (!(e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND') || a.commit !== undefined) throw e;
      }
      if (!branch) return { branch: ctx.client.forkBranch({ name: a.name, from }) };
      const commit = a.commit ?? branch.headCommitId;
      return { branch: commit ? ctx.client.forkBranch({ name: a.name, branch: branch.id, commit }) : ctx.client.forkBranch({ name: a.name, layer: branch.baseLayerId }) };
    },
  },
  {
    name: 'read_file',
    title: 'Read a file of any state',
    description: `Reads a file of a Branch, Commit or Layer (never a live directory), as UTF-8 text (or base64 when it is not valid UTF-8). Give offset/length (bytes) to read part of a large file; at most ${MAX_READ} bytes per call.`,
    input: {
      path: z.string().min(1).describe('Path relative to the root, e.g. "src/main.ts".'),
      state,
      offset: z.number().int().min(0).default(0),
      length: z.number().int().positive().max(MAX_READ).default(MAX_READ),
    },
    annotations: READ,
    run: (ctx, a: { path: string; state?: string; offset: number; length: number }) => {
      const ref = stateOf(ctx, a.state);
      const size = ctx.client.stat(ref, a.path).size;
      const bytes = ctx.client.cat(ref, a.path, { offset: a.offset, length: a.length });
      const text = bytes.toString('utf8');
      const utf8 = Buffer.from(text, 'utf8').equals(bytes);
      return { path: a.path, size, offset: a.offset, length: bytes.length, more: a.offset + bytes.length < size, ...(utf8 ? { text } : { base64: bytes.toString('base64') }) };
    },
  },
  {
    name: 'list_directory',
    title: 'List a directory of any state',
    description: 'Lists a directory of a Branch, Commit or Layer: name, kind (file, dir, symlink…), size and mode of each entry. The root is "" (the default).',
    input: { path: z.string().default('').describe('Directory path relative to the root; "" is the root.'), state },
    annotations: READ,
    run: (ctx, a: { path: string; state?: string }) => ({ path: a.path, entries: ctx.client.ls(stateOf(ctx, a.state), a.path).map(entry) }),
  },
  {
    name: 'run_command',
    title: 'Run a command in a fresh Workspace',
    description: (ctx) =>
      'Runs one command in a fresh Workspace (a private writable copy of the Branch head, as the working directory), then keeps the result as one Commit or discards it, and ends the Workspace. ' +
      'keep: "on_success" (default) commits when the exit code is 0, "always" commits anyway, "never" only reports. Returns exit code, output (stdout+stderr, last 64 KiB), the files changed and the Commit. ' +
      (ctx.sandbox
        ? `SANDBOXED in "${ctx.sandbox}": the Workspace is the only writable tree, home directories and the Store are hidden, the network is as that Sandbox allows, and memory, CPU and process limits apply (outcome OutOfMemory or PidsLimit when one stops the command).`
        : "NOT SANDBOXED: the command runs as the server's user with its environment and network, and can read or change files outside the Workspace, which are not recorded or undone. Only changes inside the Workspace are kept."),
    input: {
      command: z.array(z.string()).min(1).describe('Program and arguments, e.g. ["npm", "test"]; for shell syntax use ["sh", "-c", "make && ./run"].'),
      branch: branchArg,
      keep: z.enum(['on_success', 'always', 'never']).default('on_success'),
      message: z.string().optional().describe('Commit message (default: the command).'),
      metadata,
      timeout_seconds: z.number().positive().max(86_400).default(600).describe('The command is stopped and the Workspace discarded after this long.'),
    },
    annotations: { ...WRITE, openWorldHint: true },
    run: async (ctx, a: { command: string[]; branch?: string; keep: 'on_success' | 'always' | 'never'; message?: string; metadata?: Record<string, unknown>; timeout_seconds: number }) => {
      let exec: { exitCode: number | null; signal: string | null; output: string; truncated: boolean } | undefined;
      const r = await ctx.client.toolCall(
        branchOf(ctx, a.branch),
        async (ws) => {
          exec = await ws.exec(a.command, { maxOutputBytes: 64 * 1024 });
          const keep = a.keep === 'always' || (a.keep === 'on_success' && exec.exitCode === 0);
          return keep ? { keep: true, message: a.message ?? a.command.join(' '), metadata: { tool: 'run_command', command: a.command, exitCode: exec.exitCode, ...a.metadata } } : { keep: false };
        },
        // A standby (the next Workspace made while the agent thinks) is a mount, cheap; a
        // materialized one would write the whole tree after every call.
        { projection: ctx.projection, timeoutMs: a.timeout_seconds * 1000, standby: ctx.projection === 'fuse', sandbox: ctx.sandbox },
      );
      return { outcome: r.outcome, exitCode: exec?.exitCode ?? null, signal: exec?.signal ?? null, output: exec?.output ?? '', outputTruncated: exec?.truncated ?? false, commit: r.commit ?? null, changes: r.diff, ...(r.workspace ? { workspace: r.workspace } : {}) };
    },
  },
  {
    name: 'open_workspace',
    title: 'Open a Workspace for edits',
    description: 'Opens a private writable Workspace of the Branch head for write_file / patch_file / delete_file; finish it with commit (keeps the edits as one Commit) or discard_workspace. Returns its id.',
    input: { branch: branchArg },
    annotations: WRITE,
    run: async (ctx, a: { branch?: string }) => {
      const w = await ctx.client.openToolWorkspace(branchOf(ctx, a.branch), { projection: ctx.projection });
      ctx.opened.add(w.id);
      return { workspace: w.id, branch: w.branch, projection: w.projection };
    },
  },
  {
    name: 'write_file',
    title: 'Write a file into a Workspace',
    description: 'Creates or replaces a file in an open Workspace (parent directories are created). Paths are relative to the Workspace root; symlinks are never followed.',
    input: {
      workspace: z.string().describe('The id open_workspace returned.'),
      path: z.string().min(1),
      content: z.string().describe('The whole new content: UTF-8 text, or base64 with encoding "base64".'),
      encoding: z.enum(['utf8', 'base64']).default('utf8'),
      executable: z.boolean().default(false),
    },
    annotations: WRITE,
    run: (ctx, a: { workspace: string; path: string; content: string; encoding: 'utf8' | 'base64'; executable: boolean }) => ({
      path: a.path,
      bytes: writeInWorkspace(ownWorkspace(ctx, a.workspace), a.path, Buffer.from(a.content, a.encoding), a.executable ? 0o755 : 0o644),
    }),
  },
  {
    name: 'patch_file',
    title: 'Edit a file in a Workspace',
    description: 'Replaces exact text in a file of an open Workspace: each edit\'s old_text must occur exactly once (quote enough context); edits apply in order. Symlinks are never followed.',
    input: {
      workspace: z.string(),
      path: z.string().min(1),
      edits: z.array(z.object({ old_text: z.string(), new_text: z.string() })).min(1),
    },
    annotations: WRITE,
    run: (ctx, a: { workspace: string; path: string; edits: { old_text: string; new_text: string }[] }) => ({ path: a.path, ...patchInWorkspace(ownWorkspace(ctx, a.workspace), a.path, a.edits) }),
  },
  {
    name: 'delete_file',
    title: 'Delete a file in a Workspace',
    description: 'Deletes a file (or symlink) of an open Workspace.',
    input: { workspace: z.string(), path: z.string().min(1) },
    annotations: { ...WRITE, destructiveHint: true },
    run: (ctx, a: { workspace: string; path: string }) => (deleteInWorkspace(ownWorkspace(ctx, a.workspace), a.path), { path: a.path, deleted: true }),
  },
  {
    name: 'commit',
    title: 'Commit a Workspace',
    description:
      'Keeps the edits of an open Workspace as one Commit on its Branch, with a message, then ends the Workspace (unless keep_open). Outcomes: Created; UpToDate (nothing changed); HeadMoved (the Branch moved meanwhile: the Workspace stays open with your edits; discard it and redo them on the new head).',
    input: { workspace: z.string(), message: z.string().min(1), metadata, keep_open: z.boolean().default(false) },
    annotations: WRITE,
    run: async (ctx, a: { workspace: string; message: string; metadata?: Record<string, unknown>; keep_open: boolean }) => {
      ownWorkspace(ctx, a.workspace);
      const r = await ctx.client.commitWorkspace(a.workspace, { message: a.message, metadata: a.metadata ?? null });
      let ended = false;
      if ((r.outcome === 'Created' || r.outcome === 'UpToDate') && !a.keep_open) {
        ended = (await ctx.client.endWorkspace(a.workspace)).outcome === 'Ended';
        if (ended) ctx.opened.delete(a.workspace);
      }
      const { operation: _o, phases: _p, ...rest } = r;
      return { ...rest, workspaceEnded: ended };
    },
  },
  {
    name: 'discard_workspace',
    title: 'Discard a Workspace',
    description: 'Ends an open Workspace and throws away its uncommitted edits.',
    input: { workspace: z.string() },
    annotations: { ...WRITE, destructiveHint: true },
    run: async (ctx, a: { workspace: string }) => {
      ownWorkspace(ctx, a.workspace);
      const r = await ctx.client.endWorkspace(a.workspace, { discard: true });
      ctx.opened.delete(a.workspace);
      return { outcome: r.outcome };
    },
  },
  {
    name: 'diff',
    title: 'Diff two states',
    description: 'What differs between two states (Branch names, Commit ids, Layer ids, checkpoint names): one entry per added, deleted or modified path, paged (pass the returned "next" as "after").',
    input: { from: z.string().min(1), to: z.string().min(1).optional().describe("Default: the server's Branch."), after: z.string().optional(), limit: z.number().int().positive().max(5000).default(500) },
    annotations: READ,
    run: (ctx, a: { from: string; to?: string; after?: string; limit: number }) => ctx.client.diff(a.from, stateOf(ctx, a.to), { after: a.after, limit: a.limit }),
  },
  {
    name: 'rewind',
    title: 'Rewind a Branch',
    description:
      "Makes a Branch's files equal an older state again by adding a new Commit (nothing is deleted: the later Commits stay in the log and can be rewound to). \"to\": a Commit id of the Branch's history (see log), a checkpoint name, or its base Layer id.",
    input: { to: z.string().min(1), branch: branchArg, message: z.string().optional() },
    annotations: WRITE,
    run: (ctx, a: { to: string; branch?: string; message?: string }) => {
      const { operation: _o, phases: _p, ...rest } = ctx.client.rewind(branchOf(ctx, a.branch), a.to, { message: a.message });
      return rest;
    },
  },
  {
    name: 'checkpoint',
    title: 'Name the current state',
    description: "Pins the Branch's current state under a name, to rewind to later (e.g. before a risky change).",
    input: { name: z.string().min(1), branch: branchArg },
    annotations: WRITE,
    run: (ctx, a: { name: string; branch?: string }) => ({ checkpoint: ctx.client.checkpoint(branchOf(ctx, a.branch), a.name) }),
  },
];
