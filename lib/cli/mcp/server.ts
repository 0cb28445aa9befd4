/**
 * `layerfs mcp`: the Store's tools over the Model Context Protocol (the official SDK). Tools come
 * from the table in tools.ts; states are also resources (`layerfs://state/REF/PATH`: a file's
 * content, or a directory's listing). Typed errors become tool errors carrying their code and
 * hint, so an agent can act on them.
 */
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { LayerFsError } from '../../sdk/index.js';
import { TOOLS, type McpContext } from './tools.js';

const INSTRUCTIONS = `layerfs keeps every state of a project: Branches are lines of Commits, each Commit a whole file tree.
Read any state with read_file / list_directory (state = a Branch name, Commit id or Layer id).
Change files in one of two ways: run_command (one command in a fresh Workspace, kept as a Commit on success), or open_workspace + write_file / patch_file + commit.
Try risky things on a fork; undo with rewind (adds a Commit equal to an older state; nothing is lost).`;

function json(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2);
}

/** What to do, for errors raised without a hint of their own, in the terms of this server's tools. */
const DEFAULT_HINTS: Partial<Record<string, string>> = {
  ERR_NOT_FOUND: 'check the name or path: list_branches, log and list_directory show what exists',
  ERR_AMBIGUOUS_ID: 'give more hex digits of the id',
  ERR_INVALID_ARGUMENT: 'check the arguments against the tool\'s input schema',
  ERR_INVALID_NAME: "use 1-63 characters of a-z, 0-9, '.', '_' or '-'",
  ERR_NAME_TAKEN: 'choose another name',
  ERR_BUSY: 'wait for the running work to end, then call again',
};

/** A typed error as a tool error: code, message, hint and the offending path or id. */
export function toolError(e: unknown): CallToolResult {
  const error =
    e instanceof LayerFsError
      ? { code: e.code, message: e.message, hint: DEFAULT_HINTS[e.code], ...Object.fromEntries(Object.entries(e.details).filter(([k, v]) => k !== 'cause' && v !== undefined)) }
      : { code: 'ERR_INTERNAL', message: e instanceof Error ? e.message : String(e), hint: 'this is a bug in layerfs; the Store is unchanged by a failed call' };
  return { isError: true, content: [{ type: 'text', text: json({ error }) }] };
}

async function callTool(ctx: McpContext, run: (ctx: McpContext, a: unknown) => unknown, args: unknown): Promise<CallToolResult> {
  try {
    const out = await run(ctx, args);
    return { content: [{ type: 'text', text: json(out) }] };
  } catch (e) {
    return toolError(e);
  }
}

function registerResources(server: McpServer, ctx: McpContext): void {
  const read = (uri: URL, ref: string, path: string) => {
    const entries = ctx.client.ls(ref, path);
    const isDir = path === '' || ctx.client.stat(ref, path).kind === 'dir';
    if (isDir) return { contents: [{ uri: uri.href, mimeType: 'application/json', text: json(entries.map((e) => ({ name: e.name, kind: e.kind, size: e.size }))) }] };
    const bytes = ctx.client.cat(ref, path, { offset: 0, length: 1024 * 1024 });
    const text = bytes.toString('utf8');
    if (Buffer.from(text, 'utf8').equals(bytes)) return { contents: [{ uri: uri.href, mimeType: 'text/plain', text }] };
    return { contents: [{ uri: uri.href, mimeType: 'application/octet-stream', blob: bytes.toString('base64') }] };
  };
  server.registerResource(
    'state',
    new ResourceTemplate('layerfs://state/{ref}/{+path}', {
      list: () => ({
        resources: ctx.client.branches().map((b) => ({ uri: `layerfs://state/${encodeURIComponent(b.name)}/`, name: `${b.layerStack}/${b.name}`, description: `the files of Branch ${b.name} (head ${b.headCommitId ?? 'none'})`, mimeType: 'application/json' })),
      }),
    }),
    { title: 'A state of the Store, read-only', description: 'layerfs://state/REF/PATH: REF a Branch name, Commit id or Layer id; a directory gives its listing (JSON), a file its content (first MiB).' },
    (uri, vars) => read(uri, decodeURIComponent(String(vars.ref)), decodeURIComponent(String(vars.path ?? '')).replace(/\/+$/, '')),
  );
  // The root of a state: the template above needs a non-empty path.
  server.registerResource(
    'state-root',
    new ResourceTemplate('layerfs://state/{ref}/', { list: undefined }),
    { title: 'The root directory of a state, read-only', description: 'layerfs://state/REF/: the listing (JSON) of the root of a Branch, Commit or Layer.' },
    (uri, vars) => read(uri, decodeURIComponent(String(vars.ref)), ''),
  );
}

export function buildServer(ctx: McpContext, version: string): McpServer {
  const server = new McpServer({ name: 'layerfs', version }, { instructions: INSTRUCTIONS });
  for (const t of TOOLS) {
    server.registerTool(t.name, { title: t.title, description: typeof t.description === 'function' ? t.description(ctx) : t.description, inputSchema: t.input, annotations: t.annotations }, ((args: unknown) => callTool(ctx, t.run, args)) as never);
  }
  registerResources(server, ctx);
  return server;
}
