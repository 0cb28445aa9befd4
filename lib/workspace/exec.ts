/**
 * Process execution in a Workspace: `workspace exec` (foreground), `exec --detach`, `output`,
 * `stop`, and the Busy check a commit makes. The CLI is stateless between invocations, so every
 * execution is a directory of files under a state directory the caller passes (see
 * exec-records.ts for the layout); any later process can find, follow or stop it.
 *
 * Liveness. An execution without exit.json is 'running' while its owner (the detached
 * supervisor, or the process that called runExecution) or its command is alive, and 'lost'
 * once both are gone: whoever should have recorded the exit died first (SIGKILL, reboot), so the
 * exit status is unknown. A recorded pid only counts while its /proc start time and the boot id
 * match what was recorded, so a reused pid does not keep a dead execution running.
 *
 * States. 'exited': the command exited on its own. 'killed': it ended by a signal, or after a
 * stopExecution request (even if it then exited with a status of its own). 'lost': see above.
 *
 * A program that cannot be found is refused before anything is recorded or started, the same
 * way in both modes: runExecution rejects and startDetached throws ERR_NOT_FOUND naming it
 * (looked up like execvp does, on the request's PATH, relative paths against the cwd). If the
 * program still fails to start (it vanished after that check, or is not executable), the
 * execution is recorded as ended with the shell's status, 127 (or 126 when not executable),
 * and the reason is written to output.log (detached) or to this process's stderr (foreground).
 *
 * Sandboxed executions (`sandbox` in the request, from sandbox.ts sandboxPlan) start through
 * the Sandbox's launcher (sandbox-launch.ts) in a cgroup leaf of their own; whoever waits for
 * them adds their resource use and, when a limit ended them, their outcome to exit.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { loaderFlags } from './node-child.js';
import { accessSync, constants, existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { delimiter, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { LayerFsError, invalidArgument } from '../errors.js';
import {
  ENV,
  EXIT,
  META,
  OUTPUT,
  STOP,
  createJsonOnce,
  exists,
  exitRecord,
  groupAlive,
  inTerminalForeground,
  isAlive,
  processRef,
  sendSignal,
  spawnFailureCode,
  writeJsonAtomic,
  newMetaRecord,
} from './exec-records.js';
import { launchOf, sandboxExit, startWatch, type SandboxPlan } from './sandbox-launch.js';
import { base, commandAlive, infoOf, newRecordDir, readMeta, resolveRecord, type ExecutionInfo } from './exec-queries.js';

export { executionsDir, forgetExecutions, getExecution, infoOf, listExecutions, newRecordDir, runningExecutions, type ExecutionInfo } from './exec-queries.js';

export interface ExecRequest {
  /** Where execution records live (`<store path>.d/executions/`); created when missing. */
  stateDir: string;
  workspaceId: string;
  /** The Workspace directory; the command's working directory. */
  cwd: string;
  /** Program and arguments; the program is looked up on PATH unless it contains a slash. */
  argv: string[];
  /** The command's whole environment; process.env when omitted. */
  env?: NodeJS.ProcessEnv;
  /** Run inside this Sandbox (sandbox.ts sandboxPlan). */
  sandbox?: SandboxPlan;
}

export interface ReadOutputOptions {
  /** Keep writing what is appended until the execution ends. */
  follow?: boolean;
  /** Receives the output in order; a returned promise is awaited before the next chunk (backpressure). */
  write: (chunk: Buffer) => void | Promise<void>;
  /** Stops following; readOutput then resolves with the execution as it is at that moment. */
  signal?: AbortSignal;
}

const FOLLOW_POLL_MS = 100;
const STOP_POLL_MS = 25;
/** How long stopExecution waits for an exit after SIGKILL before it reports what it sees. */
const AFTER_KILL_MS = 5000;
const CHUNK = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// Validation

export interface Checked {
  stateDir: string;
  workspaceId: string;
  cwd: string;
  argv: string[];
  env: NodeJS.ProcessEnv;
  sandbox: SandboxPlan | null;
}

/** Validates a request (shell.ts shares it). */
export function check(req: ExecRequest): Checked {
  if (req === null || typeof req !== 'object') throw invalidArgument('an execution request must be an object');
  const { stateDir, workspaceId, cwd, argv } = req;
  if (typeof stateDir !== 'string' || stateDir === '') throw invalidArgument('stateDir must be a non-empty string');
  if (typeof workspaceId !== 'string' || workspaceId === '') throw invalidArgument('workspaceId must be a non-empty string');
  if (!Array.isArray(argv) || argv.length === 0) throw invalidArgument('argv must be a non-empty array of strings', { hint: 'give the command to run' });
  for (const a of argv as unknown[]) {
    if (typeof a !== 'string') throw invalidArgument('argv must be a non-empty array of strings');
    if (a.includes('\0')) throw invalidArgument('command arguments may not contain NUL characters');
  }
  if (argv[0] === '') throw invalidArgument('the program name (argv[0]) is empty');
  if (typeof cwd !== 'string' || cwd === '') throw invalidArgument('cwd must be a non-empty string');
  const dir = resolve(cwd);
  let st;
  try {
    st = statSync(dir);
  } catch (e) {
    throw new LayerFsError('ERR_NOT_FOUND', `Workspace directory ${dir} does not exist`, {
      path: dir,
      errno: (e as NodeJS.ErrnoException).code,
      hint: 'is the Workspace still materialized?',
    });
  }
  if (!st.isDirectory()) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `Workspace path ${dir} is not a directory`, { path: dir });
  const env = req.env ?? process.env;
  if (env === null || typeof env !== 'object') throw invalidArgument('env must be an object of strings');
  findProgram(argv[0]!, dir, env);
  return { stateDir: resolve(stateDir), workspaceId, cwd: dir, argv: [...argv], env, sandbox: req.sandbox ?? null };
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Refuses a program that execvp would not find; execvp itself still decides (see the header). */
function findProgram(program: string, cwd: string, env: NodeJS.ProcessEnv): void {
  if (program.includes('/')) {
    const path = resolve(cwd, program);
    if (!existsSync(path)) throw new LayerFsError('ERR_NOT_FOUND', `program ${program} not found`, { path, hint: 'relative paths are taken from the Workspace directory' });
    return;
  }
  const searchPath = env.PATH ?? '/usr/bin:/bin';
  for (const d of searchPath.split(delimiter)) {
    if (isExecutableFile(resolve(cwd, d === '' ? '.' : d, program))) return;
  }
  throw new LayerFsError('ERR_NOT_FOUND', `program ${program} not found on PATH`, { path: program, hint: 'check the command name, or give its path' });
}

// ---------------------------------------------------------------------------------------------
// Foreground

/**
 * Runs the command with this process's stdio, in the Workspace directory, and resolves when it
 * ends. It is recorded as running meanwhile (owned by this process), so other processes see the
 * Workspace Busy. SIGINT and SIGTERM this process receives go to the command, except a SIGINT
 * while this process is in its terminal's foreground process group: the terminal has delivered
 * that one to the command already. Killing this process does not kill the command; the
 * execution then stays 'running' while the command lives and is 'lost' after.
 */
export async function runExecution(req: ExecRequest): Promise<ExecutionInfo> {
  const r = check(req);
  const { id, dir } = newRecordDir(r.stateDir);
  const launch = launchOf(r, id, dir);
  const [program, ...args] = (launch?.argv ?? r.argv) as [string, ...string[]];
  const startMs = performance.now();
  let child: ChildProcess;
  try {
    child = spawn(program, args, { cwd: r.cwd, env: launch?.env ?? r.env, stdio: 'inherit' });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw invalidArgument(`cannot run ${program}: ${(e as Error).message}`, { cause: e });
  }
  const outcome = new Promise<{ code: number | null; signal: NodeJS.Signals | null } | { error: NodeJS.ErrnoException }>((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => resolve({ error }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const pid = child.pid;
  const watch = launch && pid !== undefined ? startWatch(launch.record) : null;
  const meta = newMetaRecord(r, id, { detached: false, owner: processRef(process.pid), command: pid === undefined ? null : processRef(pid), ...(launch ? { sandbox: launch.record } : {}) });
  writeJsonAtomic(dir, META, meta);

  const handlers: [NodeJS.Signals, () => void][] = (['SIGINT', 'SIGTERM'] as const).map((sig) => [
    sig,
    () => {
      if (pid === undefined) return;
      if (sig === 'SIGINT' && inTerminalForeground()) return;
      sendSignal(pid, sig, false);
    },
  ]);
  for (const [sig, h] of handlers) process.on(sig, h);
  let result;
  try {
    result = await outcome;
  } finally {
    for (const [sig, h] of handlers) process.off(sig, h);
  }
  if ('error' in result) {
    const message = `cannot run ${program}: ${result.error.code ?? result.error.message}`;
    process.stderr.write(`layerfs: ${message}\n`);
    createJsonOnce(dir, EXIT, exitRecord(spawnFailureCode(result.error.code), null, false, message));
  } else {
    const usage = launch ? await sandboxExit(launch.record, result.code, result.signal, startMs, watch) : {};
    createJsonOnce(dir, EXIT, { ...exitRecord(result.code, result.signal, exists(dir, STOP)), ...usage });
  }
  return infoOf(dir);
}

// ---------------------------------------------------------------------------------------------
// Detached

/** The supervisor entry: supervisor.js beside this file in dist/, supervisor.ts under tsx. */
function supervisorPath(): string {
  for (const ext of ['.js', '.ts']) {
    const p = fileURLToPath(new URL(`./supervisor${ext}`, import.meta.url));
    if (existsSync(p)) return p;
  }
  throw new LayerFsError('ERR_NOT_FOUND', 'the execution supervisor is missing beside exec.js', { path: fileURLToPath(new URL('./', import.meta.url)), hint: 'reinstall layerfs' });
}

/**
 * Starts the command in the background under a supervisor process and returns at once, with the
 * execution 'running' (its pid is null until the supervisor has started it). Output goes to the
 * execution's log (readOutput); stdin is /dev/null. The command leads its own process group, which
 * stopExecution signals as a whole.
 */
export function startDetached(req: ExecRequest): ExecutionInfo {
  const r = check(req);
  const entry = supervisorPath();
  const { id, dir } = newRecordDir(r.stateDir);
  const launch = launchOf(r, id, dir);
  try {
    writeFileSync(join(dir, ENV), JSON.stringify(launch?.env ?? r.env), { mode: 0o600, flag: 'wx' });
    writeFileSync(join(dir, OUTPUT), '', { mode: 0o600, flag: 'wx' });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw new LayerFsError('ERR_NATIVE_IO', `cannot create execution record in ${dir}`, { path: dir, errno: (e as NodeJS.ErrnoException).code, cause: e });
  }
  const child = spawn(process.execPath, [...loaderFlags(), entry, dir], { detached: true, stdio: 'ignore', cwd: process.cwd(), env: process.env });
  child.on('error', () => {
    // reported below through the missing pid
  });
  child.unref();
  if (child.pid === undefined) {
    rmSync(dir, { recursive: true, force: true });
    throw new LayerFsError('ERR_NATIVE', 'cannot start the execution supervisor', { path: process.execPath });
  }
  const meta = newMetaRecord(r, id, { detached: true, owner: processRef(child.pid), command: null, ...(launch ? { sandbox: launch.record, launch: launch.argv } : {}) });
  writeJsonAtomic(dir, META, meta);
  return { ...base(meta), state: 'running', exitCode: null, signal: null, endedAt: null };
}

// ---------------------------------------------------------------------------------------------
// Output and stop

/**
 * Writes what the execution has logged so far (a foreground execution logs nothing: its output
 * went to its terminal). With `follow`, keeps writing until the execution ends, then writes the
 * rest and resolves with its final info; output written right before the exit is never missed,
 * because the log is read to its end after the end was seen.
 */
export async function readOutput(stateDir: string, id: string, opts: ReadOutputOptions): Promise<ExecutionInfo> {
  const dir = resolveRecord(stateDir, id);
  const path = join(dir, OUTPUT);
  let fh: FileHandle | null = null;
  let pos = 0;
  const drain = async (): Promise<void> => {
    if (fh === null) {
      try {
        fh = await open(path, 'r');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw new LayerFsError('ERR_NATIVE_IO', `cannot read ${path}`, { path, errno: (e as NodeJS.ErrnoException).code, cause: e });
      }
    }
    for (;;) {
      const buf = Buffer.allocUnsafe(CHUNK);
      const { bytesRead } = await fh.read(buf, 0, CHUNK, pos);
      if (bytesRead === 0) return;
      pos += bytesRead;
      await opts.write(buf.subarray(0, bytesRead));
    }
  };
  try {
    for (;;) {
      const info = infoOf(dir);
      await drain();
      if (!opts.follow || info.state !== 'running') return info;
      if (opts.signal?.aborted) return infoOf(dir);
      try {
        await sleep(FOLLOW_POLL_MS, undefined, opts.signal ? { signal: opts.signal } : {});
      } catch {
        return infoOf(dir); // aborted
      }
    }
  } finally {
    await (fh as FileHandle | null)?.close();
  }
}

/**
 * Stops a running execution: SIGTERM to the command's process group (to the command alone for a
 * foreground one, whose group is its caller's), SIGKILL after `graceMs` (default 3000) if it is
 * still there, and SIGKILL to what is left of a detached group when the grace ends. Resolves
 * when its exit is recorded, with state 'killed'. When its owner has died, the exit is recorded
 * here, with an unknown status. 'AlreadyEnded' when it had ended before the stop reached it.
 */
export async function stopExecution(stateDir: string, id: string, opts: { graceMs?: number } = {}): Promise<{ outcome: 'Stopped' | 'AlreadyEnded'; info: ExecutionInfo }> {
  const graceMs = opts.graceMs ?? 3000;
  if (typeof graceMs !== 'number' || !Number.isFinite(graceMs) || graceMs < 0) throw invalidArgument('graceMs must be a non-negative number of milliseconds');
  const dir = resolveRecord(stateDir, id);
  const first = infoOf(dir);
  if (first.state !== 'running') return { outcome: 'AlreadyEnded', info: first };
  createJsonOnce(dir, STOP, { requestedAt: new Date().toISOString(), by: processRef(process.pid) });

  const graceEnds = performance.now() + graceMs;
  let giveUpAt = Infinity;
  let sent: NodeJS.Signals | null = null;
  let pgid: number | null = null;
  for (;;) {
    const meta = readMeta(dir);
    pgid = meta.pgid;
    if (exists(dir, EXIT)) {
      if (sent === null) return { outcome: 'AlreadyEnded', info: infoOf(dir, meta) };
      break;
    }
    const alive = commandAlive(meta);
    if (!alive && !isAlive(meta.owner)) {
      // Nobody is left to record the exit (the owner died): record it, status unknown.
      createJsonOnce(dir, EXIT, { ...exitRecord(null, sent, true, 'stopped after its owner had died; exit status unknown') });
      break;
    }
    if (alive && meta.command !== null) {
      const target = meta.pgid ?? meta.command.pid;
      if (sent === null) {
        sendSignal(target, 'SIGTERM', meta.pgid !== null);
        sent = 'SIGTERM';
      } else if (sent === 'SIGTERM' && performance.now() >= graceEnds) {
        sendSignal(target, 'SIGKILL', meta.pgid !== null);
        sent = 'SIGKILL';
        giveUpAt = performance.now() + AFTER_KILL_MS;
      }
    } else if (meta.command === null && giveUpAt === Infinity) {
      // Not started yet: the supervisor sees stop.json and does not start it.
      giveUpAt = graceEnds + AFTER_KILL_MS;
    }
    if (performance.now() > giveUpAt) break;
    await sleep(STOP_POLL_MS);
  }
  // What the command left in its group (background children) gets the rest of the grace, then SIGKILL.
  if (pgid !== null) {
    while (groupAlive(pgid) && performance.now() < graceEnds) await sleep(STOP_POLL_MS);
    if (groupAlive(pgid)) sendSignal(pgid, 'SIGKILL', true);
  }
  return { outcome: 'Stopped', info: infoOf(dir) };
}
