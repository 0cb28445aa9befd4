// client.toolCall: one Workspace per tool call, committed only when kept, ended on every path
// (throw, abort, timeout); a commit that cannot publish leaves the Workspace; a Workspace of a
// SIGKILLed process is ended by the next call (or `workspace end`) once its owner is gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Client, type ToolCallOptions, type ToolCallResult } from '../../lib/sdk/index.js';
import { FORMAT_VERSION } from '../../lib/store/index.js';
import { fuseAvailable } from '../../lib/fuse/index.js';
import { cli } from '../helpers/cli.js';
import { asFormat } from '../helpers/formats.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { processGone } from '../helpers/process-gone.js';
import { tempDir } from '../helpers/tmp.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

async function setup() {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib'), { recursive: true });
  writeFileSync(join(src, 'README'), 'readme\n');
  writeFileSync(join(src, 'lib/a.txt'), 'a\n');
  const store = join(dir, 'store.sqlite');
  const client = Client.create(store);
  const init = await client.initLayerStack({ name: 'proj', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  return { dir, store, client };
}

const materialize = { projection: 'materialize' as const };

test('kept: one Commit with the note, the diff of the call, the Workspace ended', async () => {
  const { store, client } = await setup();
  let path = '';
  const r = await client.toolCall(
    'main',
    async (ws) => {
      path = ws.path;
      writeFileSync(join(ws.path, 'new.txt'), 'new\n');
      const e = await ws.exec(['sh', '-c', 'echo out; echo err >&2; rm lib/a.txt']);
      assert.equal(e.exitCode, 0);
      assert.match(e.output, /out/);
      assert.match(e.output, /err/);
      return { keep: true, message: 'add new.txt', metadata: { tool: 'bash', callId: 'c17' } };
    },
    materialize,
  );
  assert.equal(r.outcome, 'Created');
  assert.equal(r.commit!.message, 'add new.txt');
  assert.deepEqual(r.commit!.metadata, { tool: 'bash', callId: 'c17' });
  // lib's mtime moved only because an entry went: the entry is listed, not the directory (as a diff counts changes).
  assert.deepEqual(r.diff.map((d) => `${d.change} ${d.path}`).sort(), ['added new.txt', 'deleted lib/a.txt']);
  assert.equal(r.workspace, undefined);
  assert.equal(client.branch('main').headCommitId, r.commit!.id);
  assert.equal(client.cat('main', 'new.txt').toString(), 'new\n');
  assert.deepEqual(client.workspaces(), []);
  assert.equal(existsSync(path), false);
  assert.equal(readdirSync(`${store}.d/tool-calls`).length, 0);
  assertIntact(client);
  client.close();
});

test('not kept, or nothing changed: Discarded / UpToDate, the head unchanged', async () => {
  const { client } = await setup();
  const d = await client.toolCall('main', (ws) => writeFileSync(join(ws.path, 'x'), 'x'), materialize);
  assert.equal(d.outcome, 'Discarded');
  assert.deepEqual(d.diff.map((x) => x.path), ['x']);
  const u = await client.toolCall('main', () => ({ keep: true, message: 'nothing' }), materialize);
  assert.equal(u.outcome, 'UpToDate');
  assert.deepEqual(u.diff, []);
  assert.equal(client.branch('main').headCommitId, null);
  assert.deepEqual(client.workspaces(), []);
  assertIntact(client);
  client.close();
});

test('a throw inside ends the Workspace and rethrows', async () => {
  const { client } = await setup();
  await assert.rejects(
    client.toolCall(
      'main',
      (ws) => {
        writeFileSync(join(ws.path, 'half.txt'), 'half');
        throw new Error('tool failed');
      },
      materialize,
    ),
    /tool failed/,
  );
  assert.deepEqual(client.workspaces(), []);
  assert.equal(client.branch('main').headCommitId, null);
  assertIntact(client);
  client.close();
});

test('abort mid-exec: the command is stopped, the Workspace discarded (Aborted); a timeout likewise (TimedOut)', async () => {
  const { client } = await setup();
  const ac = new AbortController();
  let pid: number | null = null;
  const r = await client.toolCall(
    'main',
    async (ws) => {
      writeFileSync(join(ws.path, 'before.txt'), 'x');
      const run = ws.exec(['sh', '-c', 'echo started; exec sleep 60']);
      // Abort once the command runs (the supervisor takes a moment to start it).
      while (pid === null) {
        await new Promise((res) => setTimeout(res, 20));
        pid = client.executions({ workspace: ws.id })[0]?.pid ?? null;
      }
      ac.abort();
      await run;
      return { keep: true };
    },
    { ...materialize, signal: ac.signal },
  );
  assert.equal(r.outcome, 'Aborted');
  assert.deepEqual(r.diff.map((x) => x.path), ['before.txt']);
  assert.ok(pid, 'the command had started');
  await processGone(pid!, 10_000);
  assert.deepEqual(client.workspaces(), []);
  const t = await client.toolCall('main', () => new Promise(() => {}), { ...materialize, timeoutMs: 300 });
  assert.equal(t.outcome, 'TimedOut');
  assert.deepEqual(client.workspaces(), []);
  assert.equal(client.branch('main').headCommitId, null);
  assertIntact(client);
  client.close();
});

/** A tool call during which another call on the same Branch lands first. */
function headMovesDuring(client: Client, opts: ToolCallOptions): Promise<ToolCallResult> {
  return client.toolCall(
    'main',
    async (ws) => {
      writeFileSync(join(ws.path, 'mine.txt'), 'mine');
      const inner = await client.toolCall('main', (w2) => (writeFileSync(join(w2.path, 'theirs.txt'), 't'), { keep: true, message: 'theirs' }), materialize);
      assert.equal(inner.outcome, 'Created');
      return { keep: true, message: 'mine' };
    },
    opts,
  );
}

test('the head moved meanwhile: by default the call is reconciled with it; both files land', async () => {
  const { client } = await setup();
  const r = await headMovesDuring(client, materialize);
  assert.equal(r.outcome, 'Created');
  assert.equal(client.cat('main', 'mine.txt').toString(), 'mine');
  assert.equal(client.cat('main', 'theirs.txt').toString(), 't');
  assert.deepEqual(client.workspaces(), []);
  assertIntact(client);
  client.close();
});

test('the head moved meanwhile, strict: HeadMoved, the Workspace stays with the work, its id returned', async () => {
  const { client } = await setup();
  const r = await headMovesDuring(client, { ...materialize, strict: true });
  assert.equal(r.outcome, 'HeadMoved');
  assert.ok(r.workspace);
  const [ws] = client.workspaces();
  assert.equal(ws!.id, r.workspace);
  assert.equal(readFileSync(join(ws!.path, 'mine.txt'), 'utf8'), 'mine');
  // Handed over: a later call does not sweep it, and `workspace end` in another process may end it.
  const later = await client.toolCall('main', () => undefined, materialize);
  assert.deepEqual(later.cleaned, []);
  const end = cli(['--store', client.storePath, '--json', 'workspace', 'end', r.workspace!, '--discard']);
  assert.equal(end.code, 0, end.stderr);
  assert.deepEqual(client.workspaces(), []);
  assertIntact(client);
  client.close();
});

test('standby: the next call takes the Workspace made after the last one; a stale one (the head moved) is replaced', async () => {
  const { client } = await setup();
  const opts = { ...materialize, standby: true };
  let firstWs = '';
  const first = await client.toolCall('main', (ws) => ((firstWs = ws.id), writeFileSync(join(ws.path, 'a.txt'), 'a'), { keep: true, message: 'a' }), opts);
  assert.equal(first.outcome, 'Created');
  // The standby is made in the background after the call.
  // The standby is made, and the call's own Workspace ended, in the background after the call.
  let spare: string | undefined;
  for (let i = 0; i < 500 && !spare; i++) {
    await new Promise((r) => setTimeout(r, 20));
    const open = client.workspaces();
    if (open.length === 1 && open[0]!.id !== firstWs) spare = open[0]!.id;
  }
  assert.ok(spare, 'a standby Workspace is ready');
  let used = '';
  const second = await client.toolCall('main', (ws) => ((used = ws.id), writeFileSync(join(ws.path, 'b.txt'), 'b'), { keep: true, message: 'b' }), opts);
  assert.equal(used, spare);
  assert.equal(second.outcome, 'Created');
  assert.deepEqual(second.diff.map((d) => d.path), ['b.txt']);
  // Another writer moves the head: the standby made after `second` is stale and not used.
  for (let i = 0; i < 500 && (client.workspaces().length !== 1 || client.workspaces()[0]!.id === used); i++) await new Promise((r) => setTimeout(r, 20));
  await client.toolCall('main', (ws) => (writeFileSync(join(ws.path, 'c.txt'), 'c'), { keep: true, message: 'c' }), materialize);
  const third = await client.toolCall('main', (ws) => (assert.ok(existsSync(join(ws.path, 'c.txt')), 'a Workspace of the new head'), { keep: true }), opts);
  assert.equal(third.outcome, 'UpToDate');
  await client.endStandbys();
  assert.deepEqual(client.workspaces(), []);
  assertIntact(client);
  client.close();
});

test('a tool-call directory left before its row was written is removed once its owner is gone; a live owner\'s stays', async () => {
  const { store, client } = await setup();
  const root = `${store}.d/tool-calls`;
  const gone = spawn('true');
  await new Promise((r) => gone.once('exit', r));
  await processGone(gone.pid!);
  const dead = join(root, `${gone.pid}-x-deadbeef0001`);
  const live = join(root, `${process.pid}-x-deadbeef0002`);
  for (const d of [dead, live]) {
    mkdirSync(join(d, 'sub'), { recursive: true });
    writeFileSync(join(d, 'sub', 'half-written.txt'), 'x');
  }
  await client.toolCall('main', () => undefined, materialize);
  assert.equal(existsSync(dead), false);
  assert.equal(existsSync(live), true);
  client.close();
});

test('a command still running at the end: Busy, the Workspace stays with its id', { timeout: 60_000 }, async () => {
  const { client } = await setup();
  let exec = '';
  const r = await client.toolCall(
    'main',
    (ws) => {
      writeFileSync(join(ws.path, 'bg.txt'), 'bg');
      exec = client.execDetached(ws.id, ['sleep', '30']).id;
      return { keep: true, message: 'with a background job' };
    },
    materialize,
  );
  assert.equal(r.outcome, 'Busy');
  assert.ok(r.workspace);
  assert.deepEqual(client.workspaces().map((w) => w.id), [r.workspace]);
  await client.stopExecution(exec);
  const c = await client.commitWorkspace(r.workspace!, { message: 'with a background job' });
  assert.equal(c.outcome, 'Created');
  assert.equal((await client.endWorkspace(r.workspace!)).outcome, 'Ended');
  assertIntact(client);
  client.close();
});

function worker(store: string, mode: 'commit' | 'hold', projection = 'materialize') {
  const child = spawn(process.execPath, nodeArgs('test/agents/tool-call-worker.ts', store, 'main', mode, projection), { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const line = new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      const m = /(committing|holding) ([0-9a-f]+)\n/.exec(buf);
      if (m) resolve(m[2]!);
    });
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before announcing its Workspace: ${buf}`)));
  });
  return { child, line };
}

test('SIGKILL mid-commit: the Store stays valid and the next call ends the orphaned Workspace', { timeout: 180_000 }, async () => {
  const seed = Number(process.env.SEED ?? Date.now() % 100_000);
  console.log(`seed ${seed}`);
  const { store, client } = await setup();
  for (let round = 0; round < 3; round++) {
    const { child, line } = worker(store, 'commit');
    const id = await line;
    // Somewhere in the status walk and commit of 4,000 new files, or after it.
    await new Promise((r) => setTimeout(r, (seed * (round + 1)) % 4000));
    child.kill('SIGKILL');
    await processGone(child.pid!);
    assertStoreIntact(store);
    const head = client.branch('main').headCommitId;
    const next = await client.toolCall('main', () => undefined, materialize);
    assert.equal(next.outcome, 'Discarded');
    const wasThere = next.cleaned.includes(id);
    console.log(`round ${round}: Workspace ${wasThere ? 'cleaned' : 'already gone'}, head ${head ? 'moved' : 'unchanged'}`);
    assert.deepEqual(client.workspaces(), []);
    assert.deepEqual(readdirSync(`${store}.d/tool-calls`), []);
    if (head) assert.equal(client.ls(head, '').length, 4002, 'a published Commit is whole');
  }
  assertIntact(client);
  client.close();
});

test('`workspace end` refuses a live call\'s Workspace and ends it once its owner is SIGKILLed', { timeout: 120_000 }, async () => {
  const { store, client } = await setup();
  const { child, line } = worker(store, 'hold');
  const id = await line;
  const busy = cli(['--store', store, '--json', 'workspace', 'end', id]);
  assert.notEqual(busy.code, 0);
  assert.match(busy.stdout + busy.stderr, /ERR_BUSY/);
  child.kill('SIGKILL');
  await processGone(child.pid!);
  const end = cli(['--store', store, '--json', 'workspace', 'end', id]);
  assert.equal(end.code, 0, end.stderr);
  assert.equal(end.json.outcome, 'Ended');
  assert.equal(end.json.discarded, true);
  assert.deepEqual(client.workspaces(), []);
  assertIntact(client);
  client.close();
});

test('a format-3 Store is upgraded: owner columns and checkpoints appear; tool calls work', async () => {
  const { store, client } = await setup();
  client.close();
  const db = new Database(store);
  asFormat(db, 3);
  db.close();
  const c = Client.connect(store);
  try {
    assert.equal(c.info().formatVersion, FORMAT_VERSION);
    const r = await c.toolCall('main', (ws) => (writeFileSync(join(ws.path, 'up.txt'), 'u'), { keep: true, message: 'after upgrade' }), materialize);
    assert.equal(r.outcome, 'Created');
    c.checkpoint('main', 'after-upgrade');
    assert.deepEqual(c.checkpoints('main').map((x) => x.name), ['after-upgrade']);
    assertIntact(c);
  } finally {
    c.close();
  }
});

const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

test('FUSE: kept and discarded calls through the daemon; the daemon ends a killed owner\'s mount by itself, with no call', { skip: fuseSkip, timeout: 180_000 }, async () => {
  const { store, client } = await setup();
  try {
    const r = await client.toolCall('main', (ws) => (writeFileSync(join(ws.path, 'f.txt'), 'fuse'), { keep: true, message: 'fuse' }), { projection: 'fuse' });
    assert.equal(r.outcome, 'Created');
    assert.deepEqual(r.diff.map((d) => d.path), ['f.txt']);
    const d = await client.toolCall('main', (ws) => void writeFileSync(join(ws.path, 'g.txt'), 'g'), { projection: 'fuse' });
    assert.equal(d.outcome, 'Discarded');
    const { child, line } = worker(store, 'hold', 'fuse');
    const id = await line;
    const held = client.workspaces().find((w) => w.id === id);
    assert.ok(held);
    assert.equal(held.state, 'mounted');
    child.kill('SIGKILL');
    await processGone(child.pid!);
    // No call runs: the daemon sees the owner is gone and ends the mount (row, mount point) itself.
    for (let i = 0; i < 200 && client.workspaces().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(client.workspaces(), []);
    assert.equal(readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${held.path} `), false, 'nothing is mounted there');
    const next = await client.toolCall('main', () => undefined, { projection: 'fuse' });
    assert.deepEqual(next.cleaned, []);
    assert.deepEqual(client.workspaces(), []);
    assert.deepEqual(readdirSync(`${store}.d/tool-calls`), [], 'the next call removed what was left of its directory');
    assert.equal(client.cat('main', 'f.txt').toString(), 'fuse');
    assertIntact(client);
  } finally {
    await client.stopDaemon({ discard: true });
    client.close();
  }
});
