/**
 * The MCP server over Streamable HTTP, for clients that cannot spawn a process. It listens on
 * the loopback interface only, requires `Authorization: Bearer TOKEN` on every request, and
 * refuses a Host or Origin that is not this loopback address (a web page the user visits could
 * otherwise reach it through DNS rebinding). Each request gets its own stateless server; the
 * Store's Client is shared.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];

function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message }, id: null }));
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? '');
  if (!m) return false;
  const a = Buffer.from(m[1]!);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Why a request is refused (status and message), or null to serve it. */
export function checkRequest(req: IncomingMessage, port: number, token: string): { status: number; message: string } | null {
  const allowed = new Set(LOOPBACK_HOSTS.map((h) => `${h}:${port}`));
  if (!allowed.has(String(req.headers.host ?? ''))) return { status: 403, message: 'Host must be this loopback address (DNS rebinding protection)' };
  const origin = req.headers.origin;
  if (origin !== undefined && !LOOPBACK_HOSTS.some((h) => origin === `http://${h}:${port}`)) return { status: 403, message: `Origin ${origin} is not allowed` };
  if (!tokenMatches(req.headers.authorization, token)) return { status: 401, message: 'a bearer token is required (Authorization: Bearer TOKEN)' };
  return null;
}

export function serveHttp(build: () => McpServer, port: number, token: string): Promise<Server> {
  const http = createServer(async (req, res) => {
    const listening = (http.address() as { port: number }).port;
    const why = checkRequest(req, listening, token);
    if (why) return refuse(res, why.status, why.message, why.status === 401 ? { 'www-authenticate': 'Bearer' } : {});
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
    const server = build();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch (e) {
      if (!res.headersSent) refuse(res, 500, e instanceof Error ? e.message : String(e));
    }
  });
  return new Promise((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, '127.0.0.1', () => resolve(http));
  });
}
