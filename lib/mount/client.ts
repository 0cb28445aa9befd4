/**
 * Talking to the mount daemon of a Store: start it on demand, send one request per connection.
 *
 * Authentication: the socket is 0600 in a 0700 directory owned by the user, and every request
 * carries the random token the daemon wrote to `<store>.d/daemon.token` (0600). Before trusting
 * either file the client checks that it belongs to this user and is private, so another user
 * can neither drive the daemon nor impersonate it. (Node exposes no SO_PEERCRED.)
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync } from 'node:fs';
import { lstat, readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { LayerFsError, type ErrorCode } from '../errors.js';
import {
  daemonPaths,
  type Backend,
  type DaemonPaths,
  type DaemonStatus,
  type MountRequest,
  type MountedCommitOutcome,
  type Request,
  type Response,
  type StopOutcome,
  type UnmountOutcome,
} from './protocol.js';

export interface RequestOptions {
  /** Give up waiting for the answer after this long (default 10 minutes: commits can be big). */
  timeoutMs?: number;
}

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

/** Sends one request; throws the daemon's error as a LayerFsError. */
export async function request<T>(storePath: string, req: Request, opts: RequestOptions = {}): Promise<T> {
  const paths = daemonPaths(storePath);
  const token = await readToken(paths);
  const line = JSON.stringify({ ...req, token }) + '\n';
  const res = await new Promise<Response>((resolve, reject) => {
    const sock = connect(paths.socket);
    let buf = '';
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new LayerFsError('ERR_BUSY', `the mount daemon did not answer ${req.op} in time`, { path: paths.socket }));
    }, opts.timeoutMs ?? 600_000);
    sock.setEncoding('utf8');
    sock.on('connect', () => sock.write(line));
    sock.on('data', (d: string) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      sock.end();
      try {
        resolve(JSON.parse(buf.slice(0, nl)) as Response);
      } catch {
        reject(new LayerFsError('ERR_NATIVE', 'the mount daemon sent an unreadable answer', { path: paths.socket }));
      }
    });
    sock.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (e.code === 'ECONNREFUSED' || e.code === 'ENOENT') reject(notRunning(paths, e.code));
      else if (e.code === 'ECONNRESET' || e.code === 'EPIPE') reject(stopping(paths));
      else reject(new LayerFsError('ERR_NATIVE_IO', `cannot reach the mount daemon: ${e.message}`, { path: paths.socket, errno: e.code }));
    });
    sock.on('close', () => {
      clearTimeout(timer);
      if (!buf.includes('\n')) reject(stopping(paths));
    });
  });
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

/** Loader flags this process runs with (`--import tsx` from sources), minus tsx's preflight. */
function loaderFlags(): string[] {
  const out: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (!['--import', '--require', '-r', '--loader', '--experimental-loader'].includes(name)) continue;
    const value = eq > 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined) break;
    if (/[\\/]tsx[\\/]dist[\\/]preflight\.cjs$/.test(value)) continue;
    out.push(`${name === '-r' ? '--require' : name}=${absoluteSpecifier(value)}`);
  }
  return out;
}

/**
 * The daemon runs with cwd `/` (it must hold no directory, least of all one inside a mount), so a
 * bare loader specifier such as `tsx` is resolved here, from this module, to a file URL.
 */
function absoluteSpecifier(value: string): string {
  if (/^(\.{0,2}\/|file:|data:|node:)/.test(value)) return value.startsWith('.') ? new URL(value, `file://${process.cwd()}/`).href : value;
  try {
    return import.meta.resolve(value);
  } catch {
    return value;
  }
}

/** Status of the running daemon, or null when none runs. */
export async function daemonStatus(storePath: string): Promise<DaemonStatus | null> {
  // A daemon that is stopping answers nothing useful: wait until it is gone.
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await request<DaemonStatus>(storePath, { op: 'status' }, { timeoutMs: 30_000 });
    } catch (e) {
      if (e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND') return null;
      if (!isStopping(e) || Date.now() > deadline) throw e;
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
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  const log = openSync(paths.log, 'a', 0o600);
  try {
    // Each kernel-backend mount keeps reads of /dev/fuse blocked on the thread pool.
    const env = { ...process.env, UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '64' };
    const child = spawn(process.execPath, [...loaderFlags(), daemonEntry(), paths.store], { detached: true, stdio: ['ignore', log, log], cwd: '/', env });
    child.on('error', () => {});
    child.unref();
  } finally {
    closeSync(log);
  }
  const deadline = Date.now() + (opts.startTimeoutMs ?? 20_000);
  for (let wait = 20; Date.now() < deadline; wait = Math.min(wait * 2, 250)) {
    await sleep(wait);
    const st = await daemonStatus(storePath).catch(() => null);
    if (st) return st;
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

/** Commits a mounted Workspace while it stays mounted; it continues from the new Commit. */
export function commitMounted(storePath: string, workspaceId: string, opts: RequestOptions = {}): Promise<MountedCommitOutcome> {
  return request<MountedCommitOutcome>(storePath, { op: 'commit', workspaceId }, opts);
}

/** Unmounts a Workspace; refuses (Dirty) with uncommitted changes unless discard. */
export function unmountWorkspace(storePath: string, workspaceId: string, opts: { discard?: boolean } = {}): Promise<UnmountOutcome> {
  return request<UnmountOutcome>(storePath, { op: 'unmount', workspaceId, discard: opts.discard === true });
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
    const deadline = Date.now() + (opts.waitMs ?? 15_000);
    while (Date.now() < deadline && alive(st.pid)) await sleep(20);
  }
  return r;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
