import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  forgetExecutions,
  getExecution,
  listExecutions,
  readOutput,
  runExecution,
  runningExecutions,
  startDetached,
  stopExecution,
  type ExecutionInfo,
} from '../../lib/workspace/exec.js';
import { tempDir } from '../helpers/tmp.js';
import { loaderFlags } from '../../lib/workspace/node-child.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const EXEC = pathToFileURL(join(root, 'lib/workspace/exec.ts')).href;

/** A wait loop that releases the command when the test creates `release` in the Workspace. */
const UNTIL_RELEASE = 'while [ ! -e release ]; do sleep 0.02; done';

interface Env {
  stateDir: string;
  ws: string;
}

/** A state directory and a Workspace directory; whatever is still running is stopped after the test. */
function setup(t: TestContext): Env {
  const env: Env = { stateDir: '', ws: '' };
  // Registered before tempDir's own hook (which, called inside a test, runs when the test ends):
  // stop what runs before its directories are removed.
  t.after(async () => {
    for (const e of listExecutions(env.stateDir)) if (e.state === 'running') await stopExecution(env.stateDir, e.id, { graceMs: 0 });
  });
  const base = tempDir('layerfs-exec-');
  env.stateDir = join(base, 'store.sqlite.d', 'executions');
  env.ws = join(base, 'ws');
  mkdirSync(env.ws);
  return env;
}

/** Whether a process exists and is not a zombie (this machine's init reaps orphans slowly). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

async function waitFor<T>(what: string, probe: () => T | undefined | null | false, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined && v !== null && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

interface NodeRun {
  pid: number;
  kill(signal: NodeJS.Signals): void;
  stdout(): string;
  done: Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>;
}

/** Runs ES module code in another node process (as another CLI invocation would), collecting its output. */
function otherProcess(code: string): NodeRun {
  const child = spawn(process.execPath, [...loaderFlags(), '--input-type=module', '-e', `const X = await import(${JSON.stringify(EXEC)});\n${code}`], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { pid: child.pid!, kill: (s) => child.kill(s), stdout: () => stdout, done };
}

function resultLine(stdout: string, tag: string): ExecutionInfo {
  const line = stdout.split('\n').find((l) => l.startsWith(`${tag} `));
  assert.ok(line, `no ${tag} line in ${JSON.stringify(stdout)}`);
  return JSON.parse(line.slice(tag.length + 1)) as ExecutionInfo;
}

function release(ws: string): void {
  writeFileSync(join(ws, 'release'), '');
}

async function runningWithPid(stateDir: string, id: string): Promise<ExecutionInfo> {
  return waitFor('the command to start', () => {
    const e = getExecution(stateDir, id);
    return e.state === 'running' && e.pid !== null ? e : null;
  });
}

test('foreground: exit codes and signals are reported and recorded', async (t) => {
  const { stateDir, ws } = setup(t);
  const ok = await runExecution({ stateDir, workspaceId: 'w1', cwd: ws, argv: ['sh', '-c', 'exit 0'] });
  assert.equal(ok.state, 'exited');
  assert.equal(ok.exitCode, 0);
  assert.equal(ok.signal, null);
  assert.equal(ok.detached, false);
  assert.equal(ok.ownerPid, process.pid);
  assert.match(ok.id, /^[0-9a-f]{32}$/);
  assert.ok(ok.pid !== null && ok.endedAt !== null);

  const three = await runExecution({ stateDir, workspaceId: 'w1', cwd: ws, argv: ['sh', '-c', 'exit 3'] });
  assert.equal(three.state, 'exited');
  assert.equal(three.exitCode, 3);

  const sig = await runExecution({ stateDir, workspaceId: 'w1', cwd: ws, argv: ['sh', '-c', 'kill -TERM $$'] });
  assert.equal(sig.state, 'killed');
  assert.equal(sig.exitCode, null);
  assert.equal(sig.signal, 'SIGTERM');

  // Ids sort by start; records persist and nothing is running.
  assert.deepEqual(
    listExecutions(stateDir, 'w1').map((e) => e.id),
    [ok.id, three.id, sig.id],
  );
  assert.deepEqual(runningExecutions(stateDir, 'w1'), []);
  assert.deepEqual(getExecution(stateDir, three.id), three);
});

test('foreground: stdio is inherited and the working directory is the Workspace', async (t) => {
  const { stateDir, ws } = setup(t);
  const run = otherProcess(`
    const info = await X.runExecution({ stateDir: ${JSON.stringify(stateDir)}, workspaceId: 'w', cwd: ${JSON.stringify(ws)}, argv: ['sh', '-c', 'pwd; echo to-stderr >&2; exit 4'] });
    process.stdout.write('RESULT ' + JSON.stringify(info) + '\\n');
  `);
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.startsWith(realpathSync(ws) + '\n'), r.stdout);
  assert.match(r.stderr, /to-stderr/);
  const info = resultLine(r.stdout, 'RESULT');
  assert.equal(info.exitCode, 4);
  assert.equal(info.cwd, ws);
  assert.equal(info.ownerPid, run.pid);
});

test('foreground: another process sees it running (Busy) until it exits', async (t) => {
  const { stateDir, ws } = setup(t);
  const run = otherProcess(`
    const info = await X.runExecution({ stateDir: ${JSON.stringify(stateDir)}, workspaceId: 'busy', cwd: ${JSON.stringify(ws)}, argv: ['sh', '-c', 'touch started; ${UNTIL_RELEASE}'] });
    process.stdout.write('RESULT ' + JSON.stringify(info) + '\\n');
  `);
  const [running] = await waitFor('the execution to be listed as running', () => {
    const r = runningExecutions(stateDir, 'busy');
    return r.length === 1 && existsSync(join(ws, 'started')) ? r : null;
  });
  assert.ok(running);
  assert.equal(running.ownerPid, run.pid);
  assert.equal(running.detached, false);
  assert.ok(running.pid !== null && alive(running.pid));
  assert.deepEqual(runningExecutions(stateDir, 'other-workspace'), []);

  release(ws);
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(resultLine(r.stdout, 'RESULT').exitCode, 0);
  assert.deepEqual(runningExecutions(stateDir, 'busy'), []);
  const [after] = listExecutions(stateDir, 'busy');
  assert.equal(after?.state, 'exited');
  assert.equal(after?.id, running.id);
});

test('foreground: SIGTERM to the caller is passed on to the command', async (t) => {
  const { stateDir, ws } = setup(t);
  const run = otherProcess(`
    const info = await X.runExecution({ stateDir: ${JSON.stringify(stateDir)}, workspaceId: 'w', cwd: ${JSON.stringify(ws)}, argv: ['sh', '-c', 'trap "echo got-term; exit 7" TERM; touch started; while :; do sleep 0.02; done'] });
    process.stdout.write('RESULT ' + JSON.stringify(info) + '\\n');
  `);
  await waitFor('the command to start', () => existsSync(join(ws, 'started')) && runningExecutions(stateDir, 'w').length === 1);
  run.kill('SIGTERM');
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /got-term/);
  const info = resultLine(r.stdout, 'RESULT');
  assert.equal(info.exitCode, 7);
  assert.equal(info.state, 'exited');
});

test('foreground: stop from another process signals the command and is recorded as killed', async (t) => {
  const { stateDir, ws } = setup(t);
  const run = otherProcess(`
    const info = await X.runExecution({ stateDir: ${JSON.stringify(stateDir)}, workspaceId: 'w', cwd: ${JSON.stringify(ws)}, argv: ['sleep', '60'] });
    process.stdout.write('RESULT ' + JSON.stringify(info) + '\\n');
  `);
  const [running] = await waitFor('the execution', () => {
    const r = runningExecutions(stateDir, 'w');
    return r.length === 1 && r[0]?.pid !== null ? r : null;
  });
  const res = await stopExecution(stateDir, running!.id, { graceMs: 2000 });
  assert.equal(res.outcome, 'Stopped');
  assert.equal(res.info.state, 'killed');
  assert.equal(res.info.signal, 'SIGTERM');
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(resultLine(r.stdout, 'RESULT').state, 'killed');
});

test('bad requests are refused before anything is recorded or started', async (t) => {
  const { stateDir, ws } = setup(t);
  const req = { stateDir, workspaceId: 'w', cwd: ws };
  await assert.rejects(runExecution({ ...req, argv: ['layerfs-no-such-program'] }), (e: any) => e.code === 'ERR_NOT_FOUND' && /layerfs-no-such-program/.test(e.message));
  assert.throws(() => startDetached({ ...req, argv: ['layerfs-no-such-program', 'x'] }), (e: any) => e.code === 'ERR_NOT_FOUND' && /layerfs-no-such-program/.test(e.message));
  assert.throws(() => startDetached({ ...req, argv: ['./missing.sh'] }), { code: 'ERR_NOT_FOUND' });
  await assert.rejects(runExecution({ ...req, cwd: join(ws, 'gone'), argv: ['true'] }), (e: any) => e.code === 'ERR_NOT_FOUND' && e.details.path === join(ws, 'gone') && typeof e.details.hint === 'string');
  writeFileSync(join(ws, 'file'), '');
  await assert.rejects(runExecution({ ...req, cwd: join(ws, 'file'), argv: ['true'] }), { code: 'ERR_NOT_A_DIRECTORY' });
  await assert.rejects(runExecution({ ...req, argv: [] }), { code: 'ERR_INVALID_ARGUMENT' });
  await assert.rejects(runExecution({ ...req, argv: ['sh', 3 as unknown as string] }), { code: 'ERR_INVALID_ARGUMENT' });
  assert.throws(() => startDetached({ ...req, argv: 'sh' as unknown as string[] }), { code: 'ERR_INVALID_ARGUMENT' });
  assert.deepEqual(listExecutions(stateDir), []);
});

test('a program that exists but cannot start ends with status 126 and says why', async (t) => {
  const { stateDir, ws } = setup(t);
  writeFileSync(join(ws, 'notexec'), 'echo hi\n');
  chmodSync(join(ws, 'notexec'), 0o644);
  const d = startDetached({ stateDir, workspaceId: 'w', cwd: ws, argv: ['./notexec'] });
  const info = await readOutput(stateDir, d.id, { follow: true, write: () => {} });
  assert.equal(info.state, 'exited');
  assert.equal(info.exitCode, 126);
  assert.equal(info.pid, null);
  let out = '';
  await readOutput(stateDir, d.id, { write: (c) => void (out += c.toString()) });
  assert.match(out, /cannot run \.\/notexec: EACCES/);
});

test('detached: returns at once; output, environment and state are visible from another process', async (t) => {
  const { stateDir, ws } = setup(t);
  const d = startDetached({
    stateDir,
    workspaceId: 'w',
    cwd: ws,
    argv: ['sh', '-c', `echo hello; echo "$LAYERFS_TEST_VAR" >&2; pwd; touch printed; ${UNTIL_RELEASE}`],
    env: { ...process.env, LAYERFS_TEST_VAR: 'from-env' },
  });
  // It cannot have finished: it waits for the release file, which does not exist yet.
  assert.equal(d.state, 'running');
  assert.equal(d.detached, true);
  assert.equal(d.workspaceId, 'w');
  assert.deepEqual(runningExecutions(stateDir, 'w').map((e) => e.id), [d.id]);
  await waitFor('the output', () => existsSync(join(ws, 'printed')));
  const running = await runningWithPid(stateDir, d.id);
  assert.ok(running.pid !== null && alive(running.pid));
  assert.equal(existsSync(join(stateDir, d.id, 'env.json')), false, 'the environment file is removed once read');

  const reader = otherProcess(`
    const info = await X.readOutput(${JSON.stringify(stateDir)}, ${JSON.stringify(d.id.slice(0, 10))}, { write: (c) => process.stdout.write(c) });
    process.stdout.write('INFO ' + JSON.stringify(info) + '\\n');
  `);
  const r = await reader.done;
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.stdout.startsWith(`hello\nfrom-env\n${realpathSync(ws)}\nINFO `), r.stdout);
  assert.equal(resultLine(r.stdout, 'INFO').state, 'running');

  release(ws);
  const end = await waitFor('the end', () => {
    const e = getExecution(stateDir, d.id);
    return e.state !== 'running' ? e : null;
  });
  assert.equal(end.state, 'exited');
  assert.equal(end.exitCode, 0);
  assert.ok(end.endedAt !== null);
});

test('detached: output --follow streams until the exit, tail included, and returns the exit code', async (t) => {
  const { stateDir, ws } = setup(t);
  const d = startDetached({ stateDir, workspaceId: 'w', cwd: ws, argv: ['sh', '-c', `echo first; ${UNTIL_RELEASE}; seq 1 20000; echo last; exit 5`] });
  const follower = otherProcess(`
    const info = await X.readOutput(${JSON.stringify(stateDir)}, ${JSON.stringify(d.id)}, { follow: true, write: (c) => process.stdout.write(c) });
    process.stdout.write('END ' + JSON.stringify(info) + '\\n');
  `);
  // The follower has streamed the first line while the command still runs.
  await waitFor('the first line at the follower', () => follower.stdout().startsWith('first\n'));
  assert.equal(getExecution(stateDir, d.id).state, 'running');
  assert.doesNotMatch(follower.stdout(), /END/);
  release(ws);
  const r = await follower.done;
  assert.equal(r.code, 0, r.stderr);
  const numbers = Array.from({ length: 20000 }, (_, i) => `${i + 1}\n`).join('');
  assert.equal(r.stdout.slice(0, r.stdout.indexOf('END ')), `first\n${numbers}last\n`);
  const info = resultLine(r.stdout, 'END');
  assert.equal(info.state, 'exited');
  assert.equal(info.exitCode, 5);
});

test('readOutput --follow stops when its signal aborts', async (t) => {
  const { stateDir, ws } = setup(t);
  const d = startDetached({ stateDir, workspaceId: 'w', cwd: ws, argv: ['sh', '-c', `echo a; ${UNTIL_RELEASE}`] });
  const ac = new AbortController();
  let out = '';
  const p = readOutput(stateDir, d.id, { follow: true, signal: ac.signal, write: (c) => void (out += c.toString()) });
  await waitFor('output', () => out === 'a\n');
  ac.abort();
  const info = await p;
  assert.equal(info.state, 'running');
});

test('stop: SIGTERM reaches the whole process group, including background children', async (t) => {
  const { stateDir, ws } = setup(t);
  const d = startDetached({ stateDir, workspaceId: 'w', cwd: ws, argv: ['sh', '-c', 'sleep 60 & echo $! > bg.pid; sleep 60'] });
  const running = await runningWithPid(stateDir, d.id);
  const bg = await waitFor('the background pid', () => {
    const text = existsSync(join(ws, 'bg.pid')) ? readFileSync(join(ws, 'bg.pid'), 'utf8').trim() : '';
    return text ? Number(text) : null;
  });
  assert.ok(alive(bg));

  const res = await stopExecution(stateDir, d.id.slice(0, 8), { graceMs: 3000 });
  assert.equal(res.outcome, 'Stopped');
  assert.equal(res.info.state, 'killed');
  assert.equal(res.info.signal, 'SIGTERM');
  assert.equal(res.info.exitCode, null);
  assert.equal(alive(running.pid!), false);
  await waitFor('the background child to die', () => !alive(bg), 2000);
  assert.deepEqual(runningExecutions(stateDir, 'w'), []);

  const again = await stopExecution(stateDir, d.id);
  assert.equal(again.outcome, 'AlreadyEnded');
  assert.equal(again.info.state, 'killed');
});

test('stop: a command that ignores SIGTERM gets SIGKILL after the grace period', async (t) => {
  const { stateDir, ws } = setup(t);
  const d = startDetached({ stateDir, workspaceId: 'w', cwd: ws, argv: ['sh', '-c', 'trap "" TERM; touch ready; while :; do sleep 0.02; done'] });
  await runningWithPid(stateDir, d.id);
  await waitFor('the trap', () => existsSync(join(ws, 'ready')));
  const t0 = Date.now();
  const res = await stopExecution(stateDir, d.id, { graceMs: 300 });
  assert.ok(Date.now() - t0 >= 300);
  assert.equal(res.outcome, 'Stopped');
  assert.equal(res.info.state, 'killed');
  assert.equal(res.info.signal, 'SIGKILL');
});

test('stop of an ended execution is AlreadyEnded; unknown, malformed and ambiguous ids', async (t) => {
  const { stateDir, ws } = setup(t);
  const done = await runExecution({ stateDir, workspaceId: 'w', cwd: ws, argv: ['true'] });
  const res = await stopExecution(stateDir, done.id);
  assert.equal(res.outcome, 'AlreadyEnded');
  assert.equal(res.info.state, 'exited');

  const unknown = '0'.repeat(32);
  assert.throws(() => getExecution(stateDir, unknown), { code: 'ERR_NOT_FOUND' });
  await assert.rejects(stopExecution(stateDir, unknown), { code: 'ERR_NOT_FOUND' });
  await assert.rejects(readOutput(stateDir, unknown, { write: () => {} }), { code: 'ERR_NOT_FOUND' });
  assert.throws(() => getExecution(join(ws, 'no-state'), unknown), { code: 'ERR_NOT_FOUND' });
  assert.deepEqual(listExecutions(join(ws, 'no-state')), []);
  assert.throws(() => getExecution(stateDir, 'xyz!'), { code: 'ERR_INVALID_ARGUMENT' });
  assert.throws(() => getExecution(stateDir, 'abc'), { code: 'ERR_INVALID_ARGUMENT' });

  // Two ended records whose ids share a prefix, written the way the module writes them.
  for (const id of ['abcd0000000000000000000000000000', 'abcd1111111111111111111111111111']) {
    const dir = join(stateDir, id);
    mkdirSync(dir);
    const meta = { version: 1, id, workspaceId: 'w', argv: ['true'], cwd: ws, detached: true, startedAt: new Date(0).toISOString(), owner: { pid: 1, startTime: null, bootId: null }, command: null, pgid: null };
    writeFileSync(join(dir, 'meta.json'), JSON.stringify(meta));
    writeFileSync(join(dir, 'exit.json'), JSON.stringify({ state: 'exited', exitCode: 0, signal: null, endedAt: new Date(0).toISOString() }));
  }
  assert.throws(() => getExecution(stateDir, 'abcd'), { code: 'ERR_AMBIGUOUS_ID' });
  assert.equal(getExecution(stateDir, 'ABCD1').id, 'abcd1111111111111111111111111111');
  assert.equal(getExecution(stateDir, done.id.slice(0, 6)).id, done.id);
});

test('a killed supervisor: running while the command lives, lost after; stop still works', async (t) => {
  const { stateDir, ws } = setup(t);
  const d = startDetached({ stateDir, workspaceId: 'w', cwd: ws, argv: ['sh', '-c', `touch ready; ${UNTIL_RELEASE}`] });
  const running = await runningWithPid(stateDir, d.id);
  await waitFor('the command', () => existsSync(join(ws, 'ready')));
  process.kill(running.ownerPid, 'SIGKILL');
  await waitFor('the supervisor to die', () => !alive(running.ownerPid));

  // The command leads its own process group and survives its supervisor.
  const orphan = getExecution(stateDir, d.id);
  assert.equal(orphan.state, 'running');
  assert.equal(orphan.pid, running.pid);
  assert.ok(alive(running.pid!));
  assert.equal(runningExecutions(stateDir, 'w').length, 1);

  release(ws);
  const lost = await waitFor('the execution to be lost', () => {
    const e = getExecution(stateDir, d.id);
    return e.state === 'lost' ? e : null;
  });
  assert.equal(lost.exitCode, null);
  assert.equal(lost.endedAt, null);
  assert.deepEqual(runningExecutions(stateDir, 'w'), []);
  const follow = await readOutput(stateDir, d.id, { follow: true, write: () => {} });
  assert.equal(follow.state, 'lost');
  assert.equal((await stopExecution(stateDir, d.id)).outcome, 'AlreadyEnded');

  // Stopping a command whose supervisor is gone records the end itself.
  const d2 = startDetached({ stateDir, workspaceId: 'w', cwd: ws, argv: ['sleep', '60'] });
  const r2 = await runningWithPid(stateDir, d2.id);
  process.kill(r2.ownerPid, 'SIGKILL');
  await waitFor('the supervisor to die', () => !alive(r2.ownerPid));
  const res = await stopExecution(stateDir, d2.id, { graceMs: 2000 });
  assert.equal(res.outcome, 'Stopped');
  assert.equal(res.info.state, 'killed');
  assert.equal(res.info.signal, 'SIGTERM');
  assert.equal(alive(r2.pid!), false);
});

test('forgetExecutions removes the ended executions of one Workspace only', async (t) => {
  const { stateDir, ws } = setup(t);
  const endedA = await runExecution({ stateDir, workspaceId: 'a', cwd: ws, argv: ['true'] });
  const runningA = startDetached({ stateDir, workspaceId: 'a', cwd: ws, argv: ['sh', '-c', UNTIL_RELEASE] });
  const endedB = await runExecution({ stateDir, workspaceId: 'b', cwd: ws, argv: ['false'] });
  assert.equal(endedB.exitCode, 1);

  forgetExecutions(stateDir, 'a');
  assert.deepEqual(listExecutions(stateDir, 'a').map((e) => e.id), [runningA.id]);
  assert.deepEqual(listExecutions(stateDir, 'b').map((e) => e.id), [endedB.id]);
  assert.throws(() => getExecution(stateDir, endedA.id), { code: 'ERR_NOT_FOUND' });

  release(ws);
  await readOutput(stateDir, runningA.id, { follow: true, write: () => {} });
  forgetExecutions(stateDir, 'a');
  assert.deepEqual(listExecutions(stateDir, 'a'), []);
  assert.deepEqual(readdirSync(stateDir), [endedB.id]);
});
