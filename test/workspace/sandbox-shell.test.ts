/**
 * workspace shell through a real terminal: tmux runs the CLI as a user would (keys typed, the
 * window resized, ^C, exit status), and the SDK's shell() stream is driven directly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

async function sandboxedWorkspace(): Promise<{ dir: string; store: string; client: Client; ws: string }> {
  const dir = tempDir('layerfs-shell-');
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'hello.txt'), 'hello\n');
  const store = join(dir, 's.sqlite');
  const client = Client.create(store);
  await client.initLayerStack({ name: 'p', source: join(dir, 'src') });
  client.forkBranch({ name: 'b', layer: 'p' });
  client.createSandbox('term', { memoryMib: 256 });
  const w = await client.createWorkspace('b', { at: join(dir, 'ws'), projection: 'materialize', sandbox: 'term' });
  return { dir, store, client, ws: w.path };
}

async function finish(client: Client): Promise<void> {
  for (const w of client.workspaces()) await client.endWorkspace(w.id, { discard: true });
  for (const s of client.sandboxStatus()) await client.removeSandbox(s.name);
  assertIntact(client);
  client.close();
}

async function until<T>(what: string, probe: () => T | undefined | false, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

test('workspace shell in tmux: commands run inside the Sandbox on a PTY, resize reaches it, ^C interrupts, the exit code comes back', async () => {
  const { dir, store, client, ws } = await sandboxedWorkspace();
  const sock = `layerfs-test-${process.pid}`;
  const tmux = (...args: string[]) => spawnSync('tmux', ['-L', sock, ...args], { encoding: 'utf8' });
  const screen = () => tmux('capture-pane', '-p', '-t', 'sh').stdout;
  const exitFile = join(dir, 'exit-status');
  const cmd = `cd ${root} && ${process.execPath} --import tsx lib/cli/bin.ts --store ${store} workspace shell ${ws}; echo $? > ${exitFile}; sleep 60`;
  try {
    assert.equal(tmux('new-session', '-d', '-s', 'sh', '-x', '100', '-y', '30', cmd).status, 0);
    const type = (keys: string) => tmux('send-keys', '-t', 'sh', keys, 'Enter');
    await until('the prompt', () => screen().includes('@sandbox'));
    type('echo "size $(stty size) host $(hostname) at $(pwd)"; test -t 0 && echo on-a-tty');
    await until('the answer', () => screen().includes(`size 30 100 host sandbox at ${ws}`) && screen().includes('on-a-tty'));

    tmux('resize-window', '-t', 'sh', '-x', '120', '-y', '40');
    type('echo "now $(stty size)"');
    await until('the new size', () => screen().includes('now 40 120'));

    type('sleep 300; echo not-interrupted');
    await until('the sleep to run', () => screen().includes('sleep 300'));
    await sleep(300);
    tmux('send-keys', '-t', 'sh', 'C-c');
    type('echo "status=$?"');
    await until('the interrupted status', () => screen().includes('status=130'));
    assert.ok(!screen().includes('\nnot-interrupted'));

    type('echo from-shell > made-in-shell; exit 7');
    const status = await until('the shell to exit', () => existsSync(exitFile) && readFileSync(exitFile, 'utf8').trim());
    assert.equal(status, '7');
    assert.equal(readFileSync(join(ws, 'made-in-shell'), 'utf8'), 'from-shell\n');
    const last = client.executions({ workspace: ws }).at(-1)!;
    assert.equal(last.exitCode, 7);
    assert.equal(last.sandbox, 'term');
    assert.ok(last.resources!.wallMs > 0);
  } finally {
    tmux('kill-server');
    await finish(client);
  }
});

test('SDK shell(): a PTY stream with resize and kill; the shell is Busy for commits while it runs', async () => {
  const { client, ws } = await sandboxedWorkspace();
  try {
    const s = client.shell(ws, { argv: ['/bin/bash', '--norc', '-i'], cols: 90, rows: 20 });
    let out = '';
    s.stream.on('data', (b: Buffer) => (out += b.toString('utf8')));
    s.stream.write('echo "dims $(stty size)"\r');
    await until('dims', () => out.includes('dims 20 90'));
    s.resize(132, 50);
    s.stream.write('echo "dims $(stty size)"\r');
    await until('new dims', () => out.includes('dims 50 132'));
    assert.equal((await client.commitWorkspace(ws)).outcome, 'Busy');
    s.stream.write('exit 3\r');
    const end = await s.exited;
    assert.equal(end.exitCode, 3);
    assert.equal(end.sandbox, 'term');

    const k = client.shell(ws, { argv: ['/bin/sh'] });
    k.kill('SIGKILL');
    const killed = await k.exited;
    assert.equal(killed.state, 'killed');
    assert.notEqual((await client.commitWorkspace(ws)).outcome, 'Busy');
  } finally {
    await finish(client);
  }
});

test('SDK shell() of a Workspace without a Sandbox: a plain shell on a PTY in the Workspace directory', async () => {
  const { dir, client } = await sandboxedWorkspace();
  try {
    const plain = await client.createWorkspace('b', { at: join(dir, 'plain'), projection: 'materialize' });
    const s = client.shell(plain.id, { argv: ['/bin/sh'], cols: 70, rows: 10 });
    let out = '';
    s.stream.on('data', (b: Buffer) => (out += b.toString('utf8')));
    s.stream.write('echo "at $(pwd) size $(stty size)"; exit 5\r');
    const end = await s.exited;
    assert.equal(end.exitCode, 5);
    assert.equal(end.sandbox, undefined);
    assert.match(out, new RegExp(`at ${plain.path} size 10 70`));
  } finally {
    await finish(client);
  }
});
