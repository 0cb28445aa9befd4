/** mcp: serve the Store's tools to an agent over the Model Context Protocol (stdio, or loopback HTTP). */
import type { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { chooseProjection, Client, LayerFsError } from '../../sdk/index.js';
import { storeFromContext } from '../context.js';
import type { ExitState, Runner } from '../runner.js';
import { serveHttp } from '../mcp/http.js';
import { buildServer } from '../mcp/server.js';
import type { McpContext } from '../mcp/tools.js';

interface McpOptions {
  branch?: string;
  projection?: 'materialize' | 'fuse' | 'auto';
  http?: string;
  tokenFile?: string;
  sandbox?: string;
}

function tokenFor(opts: McpOptions): { token: string; generated: boolean } {
  if (opts.tokenFile) return { token: readFileSync(opts.tokenFile, 'utf8').trim(), generated: false };
  const env = process.env.LAYERFS_MCP_TOKEN;
  if (env) return { token: env, generated: false };
  return { token: randomBytes(24).toString('base64url'), generated: true };
}

/** Ends the Workspaces the session opened and left (uncommitted edits are dropped with it). */
async function endOpened(ctx: McpContext): Promise<void> {
  for (const id of ctx.opened) await ctx.client.endWorkspace(id, { discard: true }).catch(() => {});
  ctx.opened.clear();
  await ctx.client.endStandbys();
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    for (const s of ['SIGINT', 'SIGTERM'] as const) process.once(s, () => resolve());
  });
}

export function registerMcpCommands(program: Command, run: Runner, _state: ExitState, version: string): void {
  program
    .command('mcp')
    .description('serve this Store to an agent over the Model Context Protocol: stdio by default, or loopback HTTP with --http (docs/AGENTS.md)')
    .option('--branch <name>', 'the Branch tools use when none is given')
    .option('--projection <kind>', 'Workspaces of tool calls: fuse, materialize or auto (default $LAYERFS_PROJECTION, else auto)')
    .option('--sandbox <name>', 'run_command runs its commands inside this Sandbox (layerfs sandbox create); without it they run unsandboxed, and the tool says so')
    .option('--http <port>', 'serve Streamable HTTP on 127.0.0.1:PORT at /mcp instead of stdio (0: any free port)')
    .option('--token-file <path>', 'with --http: the bearer token (default $LAYERFS_MCP_TOKEN, else a new one printed on stderr)')
    .action((opts: McpOptions) =>
      run(async (_out, g) => {
        const projection = chooseProjection(opts.projection, 'auto');
        const client = Client.connect(storeFromContext(g.store));
        const ctx: McpContext = { client, branch: opts.branch, projection, opened: new Set(), ...(opts.sandbox === undefined ? {} : { sandbox: opts.sandbox }) };
        if (opts.branch !== undefined) client.branch(opts.branch); // a wrong name fails now, not at the first call
        if (opts.sandbox !== undefined) client.sandboxStatus(opts.sandbox); // likewise an unknown Sandbox
        try {
          if (opts.http === undefined) {
            const server = buildServer(ctx, version);
            // The client closing our stdin ends the session (the SDK's transport does not watch for it).
            const closed = new Promise<void>((resolve) => {
              server.server.onclose = resolve;
              process.stdin.once('end', resolve);
            });
            await server.connect(new StdioServerTransport());
            await Promise.race([closed, untilSignal()]);
            await server.close();
            return;
          }
          const port = Number(opts.http);
          if (!Number.isInteger(port) || port < 0 || port > 65535) throw new LayerFsError('ERR_INVALID_ARGUMENT', `--http ${opts.http} is not a port number`, { hint: 'give 0-65535' });
          const { token, generated } = tokenFor(opts);
          const http = await serveHttp(() => buildServer(ctx, version), port, token);
          const actual = (http.address() as { port: number }).port;
          process.stderr.write(`layerfs mcp: serving http://127.0.0.1:${actual}/mcp\n`);
          if (generated) process.stderr.write(`layerfs mcp: bearer token ${token}\n`);
          await untilSignal();
          await new Promise<void>((resolve) => http.close(() => resolve()));
        } finally {
          await endOpened(ctx);
          client.close();
        }
      })(),
    );
}
