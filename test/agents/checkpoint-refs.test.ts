/**
 * Checkpoint names as state references: wherever a state is accepted (read, ls, stat, diff, log,
 * export, fork --commit/--layer, rewind, MCP tools), through the SDK, the CLI and a real MCP
 * client; kind prefixes (checkpoint:, branch:, layerstack:, commit:, layer:) disambiguate, and a
 * bare name that means two things is ERR_AMBIGUOUS_ID listing the prefixed forms.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client, LayerFsError } from '../../lib/sdk/index.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';
import { cli } from '../helpers/cli.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

async function commitFile(client: Client, dir: string, branch: string, text: string): Promise<string> {
  const at = join(dir, `ws-${branch}-${text.trim()}`);
  const ws = await client.createWorkspace(branch, { at, projection: 'materialize' });
  writeFileSync(join(at, 'a.txt'), text);
  const r = await client.commitWorkspace(ws.id, { message: text.trim() });
  assert.equal(r.outcome, 'Created');
  await client.endWorkspace(ws.id);
  return r.outcome === 'Created' ? r.commit.id : '';
}

/** main: base Layer (a.txt v1, checkpoint `start`), Commit v2 (checkpoint `green`), Commit v3. */
async function setup() {
  const dir = tempDir('layerfs-cprefs-');
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'v1\n');
  const store = join(dir, 'store.sqlite');
  const client = Client.create(store);
  const init = await client.initLayerStack({ name: 'proj', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  client.checkpoint('main', 'start');
  const green = await commitFile(client, dir, 'main', 'v2\n');
  client.checkpoint('main', 'green');
  const v3 = await commitFile(client, dir, 'main', 'v3\n');
  return { dir, store, client, layer: init.layer.id, green, v3 };
}

const text = (client: Client, ref: string) => Buffer.concat([...client.readFile(ref, 'a.txt')]).toString();

function throwsCode(fn: () => unknown, code: string): LayerFsError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof LayerFsError, String(e));
    assert.equal(e.code, code, e.message);
    return e;
  }
  assert.fail(`expected ${code}`);
}

test('SDK: a checkpoint name reads, lists, diffs, logs, exports, forks and rewinds like any state', { timeout: 120_000 }, async () => {
  const { dir, client, green, layer } = await setup();
  try {
    for (const ref of ['green', 'checkpoint:green', 'checkpoint:main/green']) assert.equal(text(client, ref), 'v2\n', ref);
    assert.equal(text(client, 'start'), 'v1\n');
    assert.equal(text(client, 'main'), 'v3\n');
    assert.deepEqual(client.ls('green').map((e) => e.name), ['a.txt']);
    assert.equal(client.stat('start', 'a.txt').size, 3);
    assert.deepEqual(client.diff('green', 'main').entries.map((e) => `${e.change} ${e.path}`), ['modified a.txt']);
    assert.deepEqual(client.diff('start', 'checkpoint:green').entries.map((e) => `${e.change} ${e.path}`), ['modified a.txt']);
    assert.deepEqual(client.log('green').map((c) => c.id), [green], 'the log starts at the pinned Commit');
    assert.deepEqual(client.log('start'), [], 'a checkpoint before any Commit has no Commits');
    client.export('green', join(dir, 'out'));
    assert.equal(readFileSync(join(dir, 'out', 'a.txt'), 'utf8'), 'v2\n');
    const f1 = client.forkBranch({ name: 'f1', commit: 'green' });
    assert.equal(f1.headCommitId, green, 'fork --commit CHECKPOINT: its Branch is implied');
    const f2 = client.forkBranch({ name: 'f2', layer: 'start' });
    assert.equal(f2.baseLayerId, layer);
    assert.equal(f2.headCommitId, null);
    assert.equal(client.forkBranch({ name: 'f3', from: 'checkpoint:main/green' }).headCommitId, green);
    assert.equal(client.forkBranch({ name: 'f4', branch: 'main', commit: 'green' }).headCommitId, green);
    throwsCode(() => client.forkBranch({ name: 'f5', layer: 'green' }), 'ERR_INVALID_ARGUMENT');
    const r = client.rewind('main', 'checkpoint:green');
    assert.equal(r.outcome, 'Created');
    assert.equal(text(client, 'main'), 'v2\n');
    client.checkpoint('f1', 'elsewhere');
    throwsCode(() => client.rewind('main', 'checkpoint:f1/elsewhere'), 'ERR_INVALID_ARGUMENT');
    throwsCode(() => client.readFile('nope', 'a.txt').next(), 'ERR_NOT_FOUND');
    throwsCode(() => client.readFile('checkpoint:nope', 'a.txt').next(), 'ERR_NOT_FOUND');
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('SDK: a name that is both a checkpoint and a Branch, a checkpoint of two Branches, or a checkpoint and an id prefix is ERR_AMBIGUOUS_ID; prefixes settle it', { timeout: 120_000 }, async () => {
  const { client, layer, v3 } = await setup();
  try {
    client.forkBranch({ name: 'dup', layer });
    client.checkpoint('main', 'dup');
    const e = throwsCode(() => text(client, 'dup'), 'ERR_AMBIGUOUS_ID');
    assert.deepEqual(e.details.candidates, ['branch:dup', 'checkpoint:dup']);
    assert.match(String(e.details.hint), /checkpoint:NAME/);
    assert.equal(text(client, 'branch:dup'), 'v1\n');
    assert.equal(text(client, 'checkpoint:dup'), 'v3\n');
    throwsCode(() => client.log('dup'), 'ERR_AMBIGUOUS_ID');
    assert.equal(client.log('branch:dup').length, 0);
    assert.equal(client.log('checkpoint:dup')[0]!.id, v3);
    client.checkpoint('dup', 'twice');
    client.checkpoint('main', 'twice');
    const two = throwsCode(() => text(client, 'twice'), 'ERR_AMBIGUOUS_ID');
    assert.deepEqual(two.details.candidates, ['checkpoint:dup/twice', 'checkpoint:main/twice']);
    throwsCode(() => text(client, 'checkpoint:twice'), 'ERR_AMBIGUOUS_ID');
    assert.equal(text(client, 'checkpoint:dup/twice'), 'v1\n');
    const hexName = v3.slice(0, 8);
    client.checkpoint('dup', hexName);
    const hex = throwsCode(() => text(client, hexName), 'ERR_AMBIGUOUS_ID');
    assert.deepEqual(hex.details.candidates, [`commit:${v3}`, `checkpoint:${hexName}`]);
    assert.equal(text(client, `checkpoint:${hexName}`), 'v1\n');
    assert.equal(text(client, `commit:${hexName}`), 'v3\n');
    assert.equal(text(client, 'layerstack:proj'), 'v1\n');
    assert.equal(text(client, `layer:${layer}`), 'v1\n');
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('CLI: cat, ls, log, diff, export, branch fork --commit and rewind take checkpoint names; ambiguity is a typed error', { timeout: 180_000 }, async () => {
  const { dir, store, client, green, layer } = await setup();
  client.forkBranch({ name: 'dup', layer });
  client.checkpoint('main', 'dup');
  client.close();
  const run = (...args: string[]) => cli(['--store', store, ...args]);
  assert.equal(run('cat', 'green', 'a.txt').stdout, 'v2\n');
  assert.equal(run('cat', 'checkpoint:main/green', 'a.txt').stdout, 'v2\n');
  assert.match(run('ls', 'start').stdout, /a\.txt/);
  assert.deepEqual(run('log', 'green', '--json').json.commits.map((c: { id: string }) => c.id), [green]);
  assert.equal(run('layerstack', 'diff', '--from', 'start', '--to', 'green', '--json').json.entries[0].path, 'a.txt');
  assert.equal(run('export', 'green', join(dir, 'exp')).code, 0);
  assert.equal(readFileSync(join(dir, 'exp', 'a.txt'), 'utf8'), 'v2\n');
  const fork = run('branch', 'fork', '--name', 'from-green', '--commit', 'green', '--json');
  assert.equal(fork.code, 0, fork.stderr);
  assert.equal(fork.json.branch.headCommitId, green);
  assert.equal(run('rewind', 'main', 'green', '--json').json.outcome, 'Created');
  assert.equal(run('cat', 'main', 'a.txt').stdout, 'v2\n');
  const amb = run('cat', 'dup', 'a.txt', '--json');
  assert.notEqual(amb.code, 0);
  const err = JSON.parse(amb.stdout || amb.stderr).error;
  assert.equal(err.code, 'ERR_AMBIGUOUS_ID');
  assert.deepEqual(err.candidates, ['branch:dup', 'checkpoint:dup']);
  assert.equal(run('cat', 'branch:dup', 'a.txt').stdout, 'v1\n');
  assertStoreIntact(store);
});

test('MCP: read_file, list_directory, diff, log and fork take checkpoint names', { timeout: 180_000 }, async () => {
  const { store, client, green } = await setup();
  client.close();
  const transport = new StdioClientTransport({ command: process.execPath, args: nodeArgs('lib/cli/bin.ts', '--store', store, 'mcp', '--branch', 'main', '--projection', 'materialize'), cwd: root, stderr: 'inherit' });
  const m = new McpClient({ name: 'checkpoint-refs-test', version: '1.0.0' });
  await m.connect(transport);
  try {
    const call = async (name: string, args: Record<string, unknown>) => {
      const r = (await m.callTool({ name, arguments: args })) as { isError?: boolean; content: { text: string }[] };
      assert.ok(!r.isError, `${name}: ${r.content[0]!.text}`);
      return JSON.parse(r.content[0]!.text);
    };
    assert.match(JSON.stringify(await call('read_file', { path: 'a.txt', state: 'green' })), /v2/);
    assert.deepEqual((await call('list_directory', { path: '', state: 'checkpoint:start' })).entries.map((e: { name: string }) => e.name), ['a.txt']);
    assert.equal((await call('diff', { from: 'start', to: 'green' })).entries[0].path, 'a.txt');
    assert.equal((await call('log', { branch: 'green' })).commits[0].id, green);
    assert.equal((await call('fork', { name: 'agent-try', from: 'green' })).branch.headCommitId, green);
  } finally {
    await m.close();
  }
  assertStoreIntact(store);
});
