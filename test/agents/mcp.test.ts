// `layerfs mcp` driven by the MCP SDK's own Client: over stdio (spawning the CLI from sources) a
// whole agent session, and over HTTP the bearer token, Host and Origin checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client } from '../../lib/sdk/index.js';
import { fuseAvailable } from '../../lib/fuse/index.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { processGone } from '../helpers/process-gone.js';
import { tempDir } from '../helpers/tmp.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

async function setup() {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib'), { recursive: true });
  writeFileSync(join(src, 'README.md'), '# demo\n');
  writeFileSync(join(src, 'lib/greet.txt'), 'hello world\n');
  const outside = join(dir, 'outside');
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'do not touch\n');
  const store = join(dir, 'store.sqlite');
  const client = Client.create(store);
  const init = await client.initLayerStack({ name: 'demo', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  client.close();
  return { dir, store, outside };
}

type Reply = { isError?: boolean; content: { type: string; text: string }[] };

async function call(m: McpClient, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = (await m.callTool({ name, arguments: args })) as Reply;
  const body = JSON.parse(r.content[0]!.text);
  if (r.isError) throw Object.assign(new Error(`${name}: ${body.error.code} ${body.error.message}`), { body: body.error });
  return body;
}

async function callError(m: McpClient, name: string, args: Record<string, unknown>): Promise<{ code: string; message: string; hint?: string }> {
  const r = (await m.callTool({ name, arguments: args })) as Reply;
  assert.equal(r.isError, true, `${name} should fail: ${r.content[0]!.text}`);
  return JSON.parse(r.content[0]!.text).error;
}

test('stdio: a whole agent session (fork, three tool calls, edits, diff, rewind), the Store verified after', { timeout: 180_000 }, async () => {
  const { store, outside } = await setup();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: nodeArgs('lib/cli/bin.ts', '--store', store, 'mcp', '--branch', 'main', '--projection', 'materialize'),
    cwd: root,
    stderr: 'inherit',
  });
  const m = new McpClient({ name: 'test-agent', version: '1.0.0' });
  await m.connect(transport);
  try {
    const { tools } = await m.listTools();
    for (const t of tools) {
      assert.ok(t.description && t.description.length > 40, `${t.name} has a usable description`);
      assert.equal(t.inputSchema.type, 'object');
    }
    assert.match(tools.find((t) => t.name === 'run_command')!.description!, /NOT SANDBOXED/);

    assert.deepEqual((await call(m, 'list_layerstacks')).layerStacks.map((s: any) => s.name), ['demo']);
    const forked = await call(m, 'fork', { name: 'try' });
    assert.equal(forked.branch.name, 'try');
    assert.deepEqual((await call(m, 'list_branches')).branches.map((b: any) => b.name).sort(), ['main', 'try']);

    // 1. kept: the command succeeds, its change becomes one Commit.
    const kept = await call(m, 'run_command', { branch: 'try', command: ['sh', '-c', 'echo built > out.txt && echo ok'], message: 'build', metadata: { callId: 'c1' } });
    assert.equal(kept.outcome, 'Created');
    assert.equal(kept.exitCode, 0);
    assert.equal(kept.output, 'ok\n');
    assert.deepEqual(kept.changes.map((c: any) => `${c.change} ${c.path}`), ['added out.txt']);
    assert.equal(kept.commit.message, 'build');
    assert.equal(kept.commit.metadata.callId, 'c1');
    // 2. discarded on purpose.
    const discarded = await call(m, 'run_command', { branch: 'try', command: ['sh', '-c', 'rm README.md'], keep: 'never' });
    assert.equal(discarded.outcome, 'Discarded');
    assert.deepEqual(discarded.changes.map((c: any) => `${c.change} ${c.path}`), ['deleted README.md']);
    // 3. failing: a non-zero exit is not kept; the output says why.
    const failing = await call(m, 'run_command', { branch: 'try', command: ['sh', '-c', 'echo broken > out.txt; echo "test failed" >&2; exit 3'] });
    assert.equal(failing.outcome, 'Discarded');
    assert.equal(failing.exitCode, 3);
    assert.match(failing.output, /test failed/);
    assert.equal((await call(m, 'read_file', { state: 'try', path: 'out.txt' })).text, 'built\n');
    const missing = await callError(m, 'run_command', { branch: 'try', command: ['no-such-program-xyz'] });
    assert.equal(missing.code, 'ERR_NOT_FOUND');
    const noFile = await callError(m, 'read_file', { state: 'try', path: 'nope.txt' });
    assert.equal(noFile.code, 'ERR_NOT_FOUND');
    assert.match(noFile.hint!, /list_directory/);

    // Edits through a Workspace: write, patch, commit.
    const ws = (await call(m, 'open_workspace', { branch: 'try' })).workspace;
    await call(m, 'write_file', { workspace: ws, path: 'docs/notes.md', content: 'line one\nline two\n' });
    const patched = await call(m, 'patch_file', { workspace: ws, path: 'lib/greet.txt', edits: [{ old_text: 'world', new_text: 'agents' }] });
    assert.equal(patched.replacements, 1);
    const ambiguous = await callError(m, 'patch_file', { workspace: ws, path: 'docs/notes.md', edits: [{ old_text: 'line', new_text: 'x' }] });
    assert.equal(ambiguous.code, 'ERR_AMBIGUOUS_ID');
    assert.ok(ambiguous.hint);
    const committed = await call(m, 'commit', { workspace: ws, message: 'notes and greeting' });
    assert.equal(committed.outcome, 'Created');
    assert.equal(committed.workspaceEnded, true);
    assert.equal((await callError(m, 'write_file', { workspace: ws, path: 'x', content: 'x' })).code, 'ERR_NOT_FOUND');

    // Reading any state, in ranges; listing directories.
    assert.equal((await call(m, 'read_file', { state: 'try', path: 'lib/greet.txt', offset: 6, length: 6 })).text, 'agents');
    assert.equal((await call(m, 'read_file', { path: 'lib/greet.txt' })).text, 'hello world\n', 'main is untouched');
    assert.deepEqual((await call(m, 'list_directory', { state: kept.commit.id })).entries.map((e: any) => e.name).sort(), ['README.md', 'lib', 'out.txt']);

    const diff = await call(m, 'diff', { from: 'main', to: 'try' });
    assert.deepEqual(diff.entries.map((e: any) => e.path).sort(), ['docs', 'docs/notes.md', 'lib/greet.txt', 'out.txt']);
    const log = await call(m, 'log', { branch: 'try' });
    assert.deepEqual(log.commits.map((c: any) => c.message), ['notes and greeting', 'build']);
    assert.equal((await call(m, 'list_commits', {})).commits.length, 2);

    // Rewind to the first Commit: a new Commit on top, the later one still in the log.
    await call(m, 'checkpoint', { branch: 'try', name: 'with-notes' });
    const rw = await call(m, 'rewind', { branch: 'try', to: kept.commit.id });
    assert.equal(rw.outcome, 'Created');
    assert.equal(rw.commit.rootId, kept.commit.rootId);
    assert.equal((await call(m, 'read_file', { state: 'try', path: 'lib/greet.txt' })).text, 'hello world\n');
    assert.equal((await call(m, 'log', { branch: 'try' })).commits.length, 3);
    assert.equal((await call(m, 'rewind', { branch: 'try', to: 'with-notes' })).outcome, 'Created');
    const unknown = await callError(m, 'rewind', { branch: 'try', to: 'no-such' });
    assert.equal(unknown.code, 'ERR_NOT_FOUND');
    assert.match(unknown.hint!, /log/);

    // Resources: a Commit's tree, read-only.
    const rootList = await m.readResource({ uri: `layerfs://state/${kept.commit.id}/` });
    assert.deepEqual(JSON.parse((rootList.contents[0] as any).text).map((e: any) => e.name).sort(), ['README.md', 'lib', 'out.txt']);
    const file = await m.readResource({ uri: 'layerfs://state/try/docs/notes.md' });
    assert.equal((file.contents[0] as any).text, 'line one\nline two\n');
    assert.ok((await m.listResources()).resources.some((r) => r.uri === 'layerfs://state/try/'));

    // File tools never follow a symlink out of the Workspace.
    await call(m, 'run_command', { branch: 'try', command: ['sh', '-c', `ln -s ${outside} escape && ln -s ${join(outside, 'secret.txt')} secret.txt`], message: 'links' });
    const ws2 = (await call(m, 'open_workspace', { branch: 'try' })).workspace;
    assert.equal((await callError(m, 'write_file', { workspace: ws2, path: 'escape/pwned.txt', content: 'x' })).code, 'ERR_UNSAFE_PATH');
    assert.equal((await callError(m, 'write_file', { workspace: ws2, path: 'secret.txt', content: 'x' })).code, 'ERR_UNSAFE_PATH');
    assert.equal((await callError(m, 'patch_file', { workspace: ws2, path: 'secret.txt', edits: [{ old_text: 'do', new_text: 'did' }] })).code, 'ERR_UNSAFE_PATH');
    assert.equal((await callError(m, 'write_file', { workspace: ws2, path: '../outside.txt', content: 'x' })).code, 'ERR_UNSAFE_PATH');
    assert.equal((await callError(m, 'write_file', { workspace: ws2, path: '/etc/passwd', content: 'x' })).code, 'ERR_UNSAFE_PATH');
    assert.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'do not touch\n');
    assert.deepEqual(readdirSync(outside), ['secret.txt']);
    // Left open: the server discards it when the session ends.
  } finally {
    await m.close();
  }
  await new Promise((r) => setTimeout(r, 500));
  assertStoreIntact(store);
  const c = Client.connect(store, { readonly: true });
  try {
    assert.deepEqual(c.workspaces(), []);
    assert.equal(c.log('try').length, 5);
  } finally {
    c.close();
  }
  assert.ok(!existsSync(`${store}.d/tool-calls`) || readdirSync(`${store}.d/tool-calls`).length === 0);
});

function rawRequest(port: number, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }));
  });
}

test('http: loopback only, the bearer token and the Origin header enforced', { timeout: 120_000 }, async () => {
  const { store } = await setup();
  const token = 'test-token-0123456789';
  const child = spawn(process.execPath, nodeArgs('lib/cli/bin.ts', '--store', store, 'mcp', '--branch', 'main', '--http', '0'), {
    cwd: root,
    env: { ...process.env, LAYERFS_MCP_TOKEN: token },
    stdio: ['ignore', 'inherit', 'pipe'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let buf = '';
      child.stderr!.on('data', (b: Buffer) => {
        buf += b.toString();
        const m = /serving http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(buf);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`mcp exited (${code}): ${buf}`)));
    });
    const auth = { authorization: `Bearer ${token}` };
    assert.equal(await rawRequest(port, {}), 401, 'no token');
    assert.equal(await rawRequest(port, { authorization: 'Bearer wrong' }), 401, 'wrong token');
    assert.equal(await rawRequest(port, { ...auth, origin: 'http://evil.example' }), 403, 'foreign Origin');
    assert.equal(await rawRequest(port, { ...auth, host: `evil.example:${port}` }), 403, 'rebound Host');
    assert.equal(await rawRequest(port, { ...auth, origin: `http://localhost:${port}` }), 200, 'own Origin');

    const m = new McpClient({ name: 'http-agent', version: '1.0.0' });
    await m.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), { requestInit: { headers: auth } }));
    try {
      assert.ok((await m.listTools()).tools.some((t) => t.name === 'run_command'));
      assert.deepEqual((await call(m, 'list_branches')).branches.map((b: any) => b.name), ['main']);
      assert.equal((await call(m, 'read_file', { path: 'README.md' })).text, '# demo\n');
    } finally {
      await m.close();
    }
    const rejected = new McpClient({ name: 'no-token', version: '1.0.0' });
    await assert.rejects(rejected.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`))));
  } finally {
    child.kill('SIGTERM');
    await processGone(child.pid!);
  }
  assertStoreIntact(store);
});

const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

test('stdio, FUSE Workspaces: run_command kept twice (the second on the standby), nothing left after the session', { skip: fuseSkip, timeout: 180_000 }, async () => {
  const { store } = await setup();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: nodeArgs('lib/cli/bin.ts', '--store', store, 'mcp', '--branch', 'main', '--projection', 'fuse'),
    cwd: root,
    stderr: 'inherit',
  });
  const m = new McpClient({ name: 'test-agent', version: '1.0.0' });
  await m.connect(transport);
  try {
    const one = await call(m, 'run_command', { command: ['sh', '-c', 'echo 1 > one.txt'] });
    assert.equal(one.outcome, 'Created');
    await new Promise((r) => setTimeout(r, 2000)); // the agent thinks; the standby is mounted
    const two = await call(m, 'run_command', { command: ['sh', '-c', 'cat one.txt > two.txt'] });
    assert.equal(two.outcome, 'Created');
    assert.equal((await call(m, 'read_file', { path: 'two.txt' })).text, '1\n');
  } finally {
    await m.close();
  }
  const c = Client.connect(store);
  try {
    for (let i = 0; i < 100 && c.workspaces().length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(c.workspaces(), []);
    assert.equal(c.log('main').length, 2);
  } finally {
    await c.stopDaemon({ discard: true });
    c.close();
  }
  assertStoreIntact(store);
});

test('stdio with --sandbox: run_command says it is sandboxed and its command cannot see the Store or write outside the Workspace', { timeout: 180_000 }, async () => {
  const { store, outside } = await setup();
  const c = Client.connect(store);
  c.createSandbox('agent', { memoryMib: 512, pidsLimit: 256 });
  c.close();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: nodeArgs('lib/cli/bin.ts', '--store', store, 'mcp', '--branch', 'main', '--projection', 'materialize', '--sandbox', 'agent'),
    cwd: root,
    stderr: 'inherit',
  });
  const m = new McpClient({ name: 'sandbox-test', version: '1.0.0' });
  await m.connect(transport);
  try {
    const tools = await m.listTools();
    const runTool = tools.tools.find((t) => t.name === 'run_command')!;
    assert.match(runTool.description!, /SANDBOXED in "agent"/);
    assert.doesNotMatch(runTool.description!, /NOT SANDBOXED/);
    // Positive control outside the Sandbox: this process can read the Store and write beside it.
    assert.ok(existsSync(store));
    const r = await call(m, 'run_command', {
      command: ['sh', '-c', `echo made > inside.txt; cat ${store} >/dev/null 2>&1 && echo store-read; echo escaped > ${join(outside, 'escape.txt')} 2>/dev/null && echo outside-written; true`],
      keep: 'always',
      message: 'sandboxed',
    });
    assert.equal(r.outcome, 'Created');
    assert.doesNotMatch(r.output, /store-read/);
    assert.doesNotMatch(r.output, /outside-written/);
    assert.equal(existsSync(join(outside, 'escape.txt')), false);
    const kept = Client.connect(store);
    try {
      assert.equal(kept.cat('main', 'inside.txt').toString(), 'made\n');
    } finally {
      kept.close();
    }
  } finally {
    await m.close();
  }
  assertStoreIntact(store);
});
