/**
 * Talking to the mount daemon of a Store: start it on demand, send one request per connection.
 *
 * Authentication: the socket is 0600 in a 0700 directory owned by the user, and every request
 * carries the random token the daemon wrote to `<store>.d/daemon.token` (0600). Before trusting
 * either file the client checks that it belongs to this user and is private, so another user
 * can neither drive the daemon nor impersonate it. (Node exposes no SO_PEERCRED.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { loaderFlags } from '../workspace/node-child.js';
import { HEAP_GROWING_PERCENT, YOUNG_MIB } from './budget.js';
import { existsSync, closeSync, constants as fsc, lstatSync, readFileSync } from 'node:fs';
import { lstat, readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { LayerFsError, type ErrorCode } from '../errors.js';
import type { CommitNoteInput } from '../history/index.js';
import { ensurePrivateDir, openPrivateFile } from '../monitor/private-file.js';
import {
  daemonPaths,
  refuseHardLinkedStore,
  type Backend,
  type DaemonPaths,
  type DaemonStatus,
  type MountRequest,
  type FuseChanges,
  type FuseCommitOutcome,
  type Request,
  type Response,
  type StopOutcome,
  type UnmountOutcome,
} from './protocol.js';

export interface RequestOptions {
  /**
   * Give up waiting for the answer once the daemon has reported no progress for this long
   * (default NO_PROGRESS_MS). The deadline runs from the last heartbeat, not from the request:
   * a commit of any size that keeps storing files is waited for.
   */
  timeoutMs?: number;
}

/** How long a request may go without an answer or a heartbeat (daemon-socket.ts) before the client gives up. */
export const NO_PROGRESS_MS = 120_000;

/** Tries of a request whose connection closed under it (spaced 50, 100, … ms: about half a second in all). */
const STOPPING_RETRIES = 5;

function notRunning(paths: DaemonPaths, why: string): LayerFsError {
  return new LayerFsError('ERR_NOT_FOUND', `no mount daemon is running for ${paths.store} (${why})`, { path: paths.socket, hint: 'it starts on demand when a Workspace is mounted' });
}

function stopping(paths: DaemonPaths): LayerFsError {
  return new LayerFsError('ERR_BUSY', `the mount daemon of ${paths.store} is stopping`, { path: paths.socket, stopping: true });
}

function isStopping(e: unknown): boolean {
  return e instanceof LayerFsError && e.code === 'ERR_BUSY' && e.details.stopping === true;
}

async function checkPrivate(path: string, what: 'socket' | 'file', paths: DaemonPaths): Promise<void> {
  let st;
  try {
    st = await lstat(path);
  } catch (e) {
    throw notRunning(paths, `${(e as NodeJS.ErrnoException).code ?? 'missing'} ${path}`);
  }
  const ok = what === 'socket' ? st.isSocket() : st.isFile();
  const uid = process.getuid?.();
  if (!ok || (uid !== undefined && st.uid !== uid) || (st.mode & 0o077) !== 0) {
    throw new LayerFsError('ERR_UNSAFE_PATH', `${path} is not a private ${what} of this user; refusing to use it`, { path, hint: 'remove it; the daemon recreates it' });
  }
}

async function readToken(paths: DaemonPaths): Promise<string> {
  await checkPrivate(paths.socket, 'socket', paths);
  try {
    await checkPrivate(paths.token, 'file', paths);
    return (await readFile(paths.token, 'utf8')).trim();
  } catch (e) {
    // The daemon writes its token before it listens and removes it first when it stops.
    if (e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND') throw stopping(paths);
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw stopping(paths);
    throw e;
  }
}

interface Waiter {
  resolve: (r: Response) => void;
  reject: (e: unknown) => void;
  timer: NodeJS.Timeout;
  /** Starts the deadline again (a heartbeat said the daemon progresses). */
  rearm: () => void;
}

/** A heartbeat line of the daemon (daemon-socket.ts), not an answer: `{"progress":N}`. */
function isHeartbeat(line: string): boolean {
  return line.startsWith('{"progress":');
}

/**
 * One kept-open connection to a Store's daemon. Requests are answered in order on it, so a
 * client that commits repeatedly pays the connect and token read once (a few ms each time
 * otherwise). The socket is unref'd while idle: it never keeps a process alive. A closed or
 * failed connection is dropped and the next request connects again (a new daemon, a new token).
 */
class DaemonConnection {
  private sock: Socket | null = null;
  private token: string | null = null;
  private buf = '';
  private readonly queue: Waiter[] = [];

  constructor(private readonly paths: DaemonPaths) {}

  private drop(err: unknown): void {
    const s = this.sock;
    this.sock = null;
    this.token = null;
    this.buf = '';
    s?.destroy();
    for (const w of this.queue.splice(0)) {
      clearTimeout(w.timer);
      w.reject(err);
    }
  }

  private async open(): Promise<{ sock: Socket; token: string }> {
    if (this.sock && this.token) return { sock: this.sock, token: this.token };
    const token = await readToken(this.paths);
    if (this.sock && this.token) return { sock: this.sock, token: this.token };
    const sock = await new Promise<Socket>((resolve, reject) => {
      const s = connect(this.paths.socket);
      s.once('connect', () => resolve(s));
      s.once('error', (e: NodeJS.ErrnoException) => {
        if (e.code === 'ECONNREFUSED' || e.code === 'ENOENT') reject(notRunning(this.paths, e.code));
        else reject(new LayerFsError('ERR_NATIVE_IO', `cannot reach the mount daemon: ${e.message}`, { path: this.paths.socket, errno: e.code }));
      });
    });
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => {
      this.buf += d;
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        if (isHeartbeat(line)) {
          for (const w of this.queue) w.rearm();
          continue;
        }
        const w = this.queue.shift();
        if (!w) continue;
        clearTimeout(w.timer);
        try {
          w.resolve(JSON.parse(line) as Response);
        } catch {
          w.reject(new LayerFsError('ERR_NATIVE', 'the mount daemon sent an unreadable answer', { path: this.paths.socket }));
        }
      }
      if (this.queue.length === 0) sock.unref();
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      if (this.sock === sock) this.drop(stopping(this.paths));
    });
    this.sock = sock;
    this.token = token;
    return { sock, token };
  }

  async send(req: Request, opts: RequestOptions): Promise<Response> {
    const { sock, token } = await this.open();
    const line = JSON.stringify({ ...req, token }) + '\n';
    return new Promise<Response>((resolve, reject) => {
      const ms = opts.timeoutMs ?? NO_PROGRESS_MS;
      const expire = () => this.drop(new LayerFsError('ERR_BUSY', `the mount daemon did not answer ${req.op} and reported no progress for ${Math.round(ms / 1000)} s`, { path: this.paths.socket, hint: `see ${this.paths.log}` }));
      const w: Waiter = {
        resolve,
        reject,
        timer: setTimeout(expire, ms).unref(),
        rearm: () => {
          clearTimeout(w.timer);
          w.timer = setTimeout(expire, ms).unref();
        },
      };
      this.queue.push(w);
      sock.ref();
      sock.write(line);
    });
  }

  close(): void {
    this.drop(stopping(this.paths));
  }
}

const connections = new Map<string, DaemonConnection>();

function connectionFor(paths: DaemonPaths): DaemonConnection {
  let c = connections.get(paths.store);
  if (!c) connections.set(paths.store, (c = new DaemonConnection(paths)));
  return c;
}

/** Closes the kept-open connection to a Store's daemon (if any). */
export function closeDaemonConnection(storePath: string): void {
  const paths = daemonPaths(storePath);
  connections.get(paths.store)?.close();
  connections.delete(paths.store);
}

/** Sends one request on the Store's kept-open connection; throws the daemon's error as a LayerFsError. */
export async function request<T>(storePath: string, req: Request, opts: RequestOptions = {}): Promise<T> {
  const paths = daemonPaths(storePath);
  const conn = connectionFor(paths);
  let res: Response;
  for (let attempt = 0; ; attempt++) {
    try {
      res = await conn.send(req, opts);
      break;
    } catch (e) {
      // A kept connection to a daemon that has since stopped: try again on a fresh one. A daemon
      // still on its way out (killed, threads not yet gone) can accept that one too and close
      // it, so a few more tries, spaced, until it is gone (then: not running).
      if (!isStopping(e) || attempt >= STOPPING_RETRIES) throw e;
      if (attempt > 0) await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
  if (!res.ok && res.error.code === 'ERR_INVALID_ARGUMENT' && /daemon token/.test(res.error.message)) {
    // A new daemon wrote a new token since this connection opened.
    conn.close();
    res = await conn.send(req, opts);
  }
  if (res.ok) return res.result as T;
  const { code, message, ...details } = res.error;
  throw new LayerFsError(code as ErrorCode, message, details);
}

/** The daemon entry: daemon-main.js beside this file in dist/, daemon-main.ts under tsx. */
function daemonEntry(): string {
  for (const ext of ['.js', '.ts']) {
    const p = fileURLToPath(new URL(`./daemon-main${ext}`, import.meta.url));
    if (existsSync(p)) return p;
  }
  throw new LayerFsError('ERR_NOT_FOUND', 'the mount daemon entry is missing beside client.js', { hint: 'reinstall layerfs' });
}

/** Status of the running daemon, or null when none runs. */
export async function daemonStatus(storePath: string): Promise<DaemonStatus | null> {
  // A daemon that is stopping answers nothing useful: wait until it is gone.
  const deadline = performance.now() + 20_000;
  for (;;) {
    try {
      return await request<DaemonStatus>(storePath, { op: 'status' }, { timeoutMs: 30_000 });
    } catch (e) {
      if (e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND') return null;
      if (!isStopping(e) || performance.now() > deadline) throw e;
      await sleep(50);
    }
  }
}

/** Returns the running daemon's status, starting the daemon first when none runs. */
export async function ensureDaemon(storePath: string, opts: { startTimeoutMs?: number } = {}): Promise<DaemonStatus> {
  const running = await daemonStatus(storePath);
  if (running) return running;
  const paths = daemonPaths(storePath);
  if (!existsSync(paths.store)) throw new LayerFsError('ERR_NOT_FOUND', `no Store at ${paths.store}`, { path: paths.store });
  refuseHardLinkedStore(paths.store);
  // The log is opened here, before the daemon checks anything: a planted symlink or a directory
  // another user controls must be refused now, not followed.
  ensurePrivateDir(paths.dir);
  const owner = lstatSync(paths.dir).uid;
  if (process.getuid && owner !== process.getuid()) {
    // The daemon serves only its own user's <store>.d (root included: it never takes one over).
    throw new LayerFsError('ERR_UNSAFE_PATH', `${paths.dir} belongs to uid ${owner}; a mount daemon runs only in its owner's state directory`, { path: paths.dir, hint: 'mount Workspaces of this Store as its owner' });
  }
  const log = openPrivateFile(paths.log, fsc.O_WRONLY | fsc.O_APPEND | fsc.O_CREAT);
  let child: ChildProcess;
  try {
    // Each kernel-backend mount keeps reads of /dev/fuse blocked on the thread pool.
    const env = { ...process.env, UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '64' };
    // --expose-gc: a serving thread collects after a long commit (loop-turns.ts settle).
    child = spawn(process.execPath, [`--max-semi-space-size=${YOUNG_MIB}`, `--heap-growing-percent=${HEAP_GROWING_PERCENT}`, '--expose-gc', ...loaderFlags(), daemonEntry(), paths.store], { detached: true, stdio: ['ignore', log, log], cwd: '/', env });
    child.on('error', () => {});
    child.unref();
  } finally {
    closeSync(log);
  }
  // Waited for while it runs: a daemon loading its modules on a busy machine is slow, not failed
  // (tens of seconds under tsx at load 40 on 2 cores). One that exited without answering (another
  // daemon took the Store first: its answer comes next) is waited for a little longer only.
  const started = child;
  let exited = false;
  started.once('exit', () => (exited = true));
  const deadline = performance.now() + (opts.startTimeoutMs ?? 300_000);
  for (let wait = 20, after = Infinity; performance.now() < Math.min(deadline, after); wait = Math.min(wait * 2, 250)) {
    await sleep(wait);
    const st = await daemonStatus(storePath).catch(() => null);
    if (st) return st;
    if (exited && after === Infinity) after = performance.now() + 5_000;
  }
  throw new LayerFsError('ERR_NATIVE', `the mount daemon did not start in time`, { path: paths.log, hint: `see ${paths.log}` });
}

export type MountOptions = MountRequest;

/** Mounts a Workspace (starting the daemon when needed). */
export async function mountWorkspace(storePath: string, opts: MountOptions): Promise<{ workspaceId: string; path: string; rootId: string; backend: Backend; daemonPid: number }> {
  const st = await ensureDaemon(storePath);
  const r = await request<{ workspaceId: string; path: string; rootId: string; backend: Backend }>(storePath, { op: 'mount', ...opts });
  return { ...r, daemonPid: st.pid };
}

/** What changed in a mounted Workspace, per path. */
export function fuseChanges(storePath: string, workspaceId: string): Promise<FuseChanges> {
  return request<FuseChanges>(storePath, { op: 'changes', workspaceId });
}

/** Commits a mounted Workspace while it stays mounted; it continues from the new Commit. */
export function commitFuse(storePath: string, workspaceId: string, opts: RequestOptions & { note?: CommitNoteInput; strict?: boolean } = {}): Promise<FuseCommitOutcome> {
  return request<FuseCommitOutcome>(storePath, { op: 'commit', workspaceId, ...(opts.note ? { note: opts.note } : {}), ...(opts.strict ? { strict: true } : {}) }, opts);
}

/** Unmounts a Workspace; refuses (Dirty) with uncommitted changes unless discard. */
export function unmountWorkspace(storePath: string, workspaceId: string, opts: { discard?: boolean; forget?: boolean } = {}): Promise<UnmountOutcome> {
  return request<UnmountOutcome>(storePath, { op: 'unmount', workspaceId, discard: opts.discard === true, forget: opts.forget === true });
}

/** Stops the daemon and unmounts everything; refuses (Dirty) with uncommitted changes unless discard. Waits for the process to exit. */
export async function stopDaemon(storePath: string, opts: { discard?: boolean; waitMs?: number } = {}): Promise<StopOutcome | { outcome: 'NotRunning' }> {
  const st = await daemonStatus(storePath);
  if (!st) return { outcome: 'NotRunning' };
  let r: StopOutcome;
  try {
    r = await request<StopOutcome>(storePath, { op: 'stop', discard: opts.discard === true });
  } catch (e) {
    if (e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND') return { outcome: 'NotRunning' };
    if (!isStopping(e)) throw e;
    r = { outcome: 'Stopped', unmounted: [] };
  }
  if (r.outcome === 'Stopped') {
    const deadline = performance.now() + (opts.waitMs ?? 15_000);
    while (performance.now() < deadline && alive(st.pid)) await sleep(20);
  }
  return r;
}

/**
 * Workspaces a live daemon of this Store serves right now, from its mounts.json (no request,
 * no daemon start: cheap enough for listings). Empty when no daemon runs, including a killed
 * one (its pid is gone or a zombie) whose file was left behind.
 */
export function servedWorkspaces(storePath: string): Set<string> {
  const paths = daemonPaths(storePath);
  let j: { pid?: unknown; mounts?: { workspaceId?: unknown }[] };
  try {
    j = JSON.parse(readFileSync(paths.mounts, 'utf8')) as typeof j;
  } catch {
    return new Set();
  }
  if (typeof j.pid !== 'number' || !alive(j.pid) || !isDaemon(j.pid)) return new Set();
  return new Set((j.mounts ?? []).map((m) => m.workspaceId).filter((id): id is string => typeof id === 'string'));
}

/** The process runs our daemon entry (not an unrelated process that got a recycled pid). */
function isDaemon(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('daemon-main');
  } catch {
    return process.platform !== 'linux';
  }
}

/** A process that runs (a zombie, e.g. a SIGKILLed daemon not yet reaped, counts as gone). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return process.platform !== 'linux';
  }
}
