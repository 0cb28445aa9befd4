/**
 * One call per tool call: `client.toolCall(branch, fn)` gives `fn` a fresh Workspace of the
 * Branch head, and afterwards commits it (only when `fn` asks to keep it) and ends it, whatever
 * happened: a throw, an abort, a timeout. The Workspace records this process as its owner, so a
 * Workspace left behind by a killed process is recognised (its owner proven gone) and ended by
 * the next call. A commit that cannot publish (the head moved, executions still running, or — with
 * the reconciling commit — a conflict) hands the Workspace over instead of dropping the work.
 */
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { resolveBranch } from '../history/index.js';
import type { Receipt } from '../monitor/monitor.js';
import type { Store } from '../store/store.js';
import {
  chooseProjection,
  isSelf,
  orphanedWorkspaces,
  ownerGone,
  ownerTag,
  parseOwnerTag,
  runningExecutions,
  selfOwner,
  projectionOf,
  setWorkspaceOwner,
  stopExecution,
  workspaceOwner,
  workspacePaths,
  type ExecutionInfo,
  type WorkspaceRow,
} from '../workspace/index.js';
import type { ToolCallHost } from './tool-call-host.js';
import type { CommitInfo, CommitResult, WorkspaceStatus } from './types.js';
import { endInBackground, prepareStandby, takeStandby } from './standby.js';
import { attachWorkspace, checkSandbox } from './sandbox.js';

export interface ToolCallOptions {
  /** fuse, materialize or auto (default: $LAYERFS_PROJECTION, else auto: fuse where this machine can mount). */
  projection?: 'materialize' | 'fuse' | 'auto';
  backend?: 'kernel';
  /** The Workspace directory (empty or absent); default a new one under `<store>.d/tool-calls/`. */
  at?: string;
  /** Aborting ends the call: running commands are stopped and the Workspace is discarded. */
  signal?: AbortSignal;
  /** Like an abort after this many ms. */
  timeoutMs?: number;
  /**
   * Refuse to reconcile with a moved head and report `HeadMoved` instead. By default a call
   * whose Branch moved meanwhile is reconciled with it (`Created`, or `Conflicted` with the
   * Workspace handed over for `workspace resolve`).
   */
  strict?: boolean;
  /**
   * Keep one fresh Workspace of the Branch head ready for the next call (made in the background
   * after this one), so that call skips creating one; the call's own Workspace is ended in the
   * background once its outcome is settled. `client.endStandbys()` waits for those ends and ends
   * the standbys.
   */
  standby?: boolean;
  /** Run the call's executions inside this Sandbox (`createSandbox`); its Workspace is attached to it. */
  sandbox?: string;
}

export interface ToolCallExecResult {
  execution: ExecutionInfo;
  exitCode: number | null;
  signal: string | null;
  /** stdout and stderr interleaved; the last `maxOutputBytes` of them. */
  output: string;
  truncated: boolean;
}

/** What `fn` receives: the Workspace, its directory, and a way to run commands in it. */
export interface ToolCallWorkspace {
  id: string;
  path: string;
  branch: string;
  projection: 'materialize' | 'fuse';
  /** Aborted when the call is aborted or times out. */
  signal: AbortSignal;
  /** Runs a command in the Workspace (output captured, not inherited); stopped on abort. */
  exec(argv: string[], opts?: { env?: NodeJS.ProcessEnv; maxOutputBytes?: number }): Promise<ToolCallExecResult>;
}

/** What `fn` returns: keep (commit with this note) or not (the default). */
export type ToolCallDecision = { keep: true; message?: string; metadata?: Record<string, unknown> | null; author?: string } | { keep: false } | void | undefined;

export type ToolCallChange = WorkspaceStatus['changes'][number];

export type ToolCallOutcome = 'Created' | 'UpToDate' | 'Discarded' | 'Aborted' | 'TimedOut' | 'HeadMoved' | 'Busy' | 'Conflicted';

export interface ToolCallResult {
  /**
   * Created / UpToDate: kept (or nothing to keep) and ended. Discarded: not kept, ended.
   * Aborted / TimedOut: stopped and discarded. HeadMoved / Busy / Conflicted: not published; the
   * Workspace stays (`workspace`) with the work in it, for the caller to commit, resolve or end.
   */
  outcome: ToolCallOutcome;
  commit?: CommitInfo;
  /** What the call changed, per path, relative to the Branch head it started from. */
  diff: ToolCallChange[];
  /** Set when the Workspace was left for the caller. */
  workspace?: string;
  /** The commit's receipt when one ran; the call's own otherwise. */
  receipt: Receipt;
  /** Orphaned Workspaces (of killed processes) this call ended first. */
  cleaned: string[];
  /** Wall ms by step: sweep (orphans), create (or take the standby), fn, status, commit, end. */
  phases: Record<string, number>;
}

const DEFAULT_MAX_OUTPUT = 1024 * 1024;

function toolCallRoot(store: Store): string {
  return `${store.path}.d/tool-calls`;
}

/**
 * Ends the Workspaces whose owner is proven gone, and removes tool-call directories left before
 * their Workspace row was written (their owner, in the name, gone too).
 */
export async function sweepOrphans(client: ToolCallHost, store: Store): Promise<string[]> {
  const ended: string[] = [];
  for (const id of orphanedWorkspaces(store)) {
    const hex = toHex(id);
    try {
      const r = await client.endWorkspace(hex, { discard: true });
      if (r.outcome === 'Ended') ended.push(hex);
    } catch (e) {
      if (!(e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND')) throw e; // ended meanwhile by another sweep
    }
  }
  const root = toolCallRoot(store);
  if (!existsSync(root)) return ended;
  const known = new Set(workspacePaths(store));
  for (const name of readdirSync(root)) {
    const dir = join(root, name);
    const owner = parseOwnerTag(name);
    if (!owner || known.has(dir) || !ownerGone(owner)) continue;
    try {
      // Never recurse into a mount point: the files under it are not this directory's.
      if (statSync(dir).dev !== statSync(root).dev) continue;
      rmSync(dir, { recursive: true, force: true });
    } catch {
      /* a dead mount (ENOTCONN) or gone meanwhile: left for `daemon`/`workspace end` */
    }
  }
  return ended;
}

/**
 * Whether `workspace end` may end this Workspace, and how: one owned by a live tool call of
 * another process is refused (ERR_BUSY); one whose owner is proven gone is ended with discard
 * (the call it belonged to never asked to keep anything that was not already published).
 */
export function endPolicy(store: Store, w: WorkspaceRow, opts: { discard?: boolean }): { discard?: boolean } {
  const owner = workspaceOwner(store, w.id);
  if (!owner || isSelf(owner)) return opts;
  if (!ownerGone(owner)) {
    throw new LayerFsError('ERR_BUSY', `Workspace ${toHex(w.id)} belongs to a running tool call (process ${owner.pid})`, {
      id: toHex(w.id),
      pid: owner.pid,
      hint: 'wait for that call to end; its Workspace is ended with it',
    });
  }
  return { ...opts, discard: true };
}

function abortError(signal: AbortSignal): LayerFsError {
  const timedOut = signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError';
  return new LayerFsError('ERR_ABORTED', timedOut ? 'the tool call timed out' : 'the tool call was aborted', { reason: timedOut ? 'timeout' : 'signal' });
}

function makeWorkspace(client: ToolCallHost, w: WorkspaceRow, branch: string, signal: AbortSignal): ToolCallWorkspace {
  const id = toHex(w.id);
  return {
    id,
    path: w.path,
    branch,
    projection: w.projection,
    signal,
    async exec(argv, o = {}) {
      if (signal.aborted) throw abortError(signal);
      const max = o.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
      const started = client.execDetached(id, argv, { env: o.env });
      let kept: Buffer[] = [];
      let bytes = 0;
      let truncated = false;
      const stop = () => void client.stopExecution(started.id, { graceMs: 500 }).catch(() => {});
      signal.addEventListener('abort', stop, { once: true });
      let info: ExecutionInfo;
      try {
        info = await client.executionOutput(started.id, {
          follow: true,
          write: (b) => {
            kept.push(b);
            bytes += b.length;
            if (bytes > 2 * max) {
              const all = Buffer.concat(kept);
              kept = [all.subarray(all.length - max)];
              bytes = max;
              truncated = true;
            }
          },
        });
      } finally {
        signal.removeEventListener('abort', stop);
      }
      if (signal.aborted) throw abortError(signal);
      let out = Buffer.concat(kept);
      if (out.length > max) {
        out = out.subarray(out.length - max);
        truncated = true;
      }
      return { execution: info, exitCode: info.exitCode, signal: info.signal, output: out.toString('utf8'), truncated };
    },
  };
}

async function createOwned(client: ToolCallHost, store: Store, branch: string, opts: ToolCallOptions): Promise<WorkspaceRow> {
  const owner = selfOwner();
  const b = resolveBranch(store, branch);
  const projection = chooseProjection(opts.projection, 'auto');
  checkSandbox(store, opts.sandbox);
  const make = async (): Promise<WorkspaceRow> => {
    const at = opts.at ?? join(toolCallRoot(store), `${ownerTag(owner)}-${randomBytes(6).toString('hex')}`);
    mkdirSync(dirname(at), { recursive: true });
    const w = await projectionOf(projection).create(store, b, at, { owner, ...(opts.backend ? { backend: opts.backend } : {}) });
    if (opts.sandbox !== undefined) attachWorkspace(store, toHex(w.id), opts.sandbox);
    return w;
  };
  if (!opts.standby || opts.at !== undefined) return make();
  const ready = await takeStandby(client, store, b, projection);
  return ready ?? make();
}

/** After a call with `standby`: the next Workspace of the (possibly new) head, made meanwhile. */
function refillStandby(client: ToolCallHost, store: Store, branch: string, opts: ToolCallOptions): void {
  if (!opts.standby || opts.at !== undefined) return;
  try {
    const b = resolveBranch(store, branch);
    prepareStandby(client, b, chooseProjection(opts.projection, 'auto'), () => createOwned(client, store, branch, { ...opts, standby: false }));
  } catch {
    /* the Branch is gone: no standby */
  }
}

/** Resolves with fn's decision, or rejects with ERR_ABORTED as soon as the signal fires. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * The call's signal: the caller's, and a timeout. The timer is a referenced one (unlike
 * AbortSignal.timeout's), so a call waiting only for its timeout keeps the process alive.
 */
function callSignal(opts: ToolCallOptions): { signal: AbortSignal; dispose: () => void } {
  const ac = new AbortController();
  const timer = opts.timeoutMs !== undefined ? setTimeout(() => ac.abort(new DOMException('the tool call timed out', 'TimeoutError')), opts.timeoutMs) : undefined;
  const signal = opts.signal ? AbortSignal.any([opts.signal, ac.signal]) : ac.signal;
  return { signal, dispose: () => clearTimeout(timer) };
}

/** How long an aborted call's `fn` may take to notice before its Workspace goes anyway. */
const SETTLE_MS = 2000;

/** After an abort: stop the Workspace's commands and give `fn` a moment to return. */
async function settle(store: Store, id: string, pending: Promise<unknown>): Promise<void> {
  const stateDir = `${store.path}.d/executions`;
  await Promise.all(runningExecutions(stateDir, id).map((e) => stopExecutionQuietly(stateDir, e.id)));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([pending.then(noop, noop), new Promise<void>((r) => (timer = setTimeout(r, SETTLE_MS)))]);
  clearTimeout(timer);
}

const noop = (): void => {};

async function changesOf(client: ToolCallHost, id: string): Promise<ToolCallChange[]> {
  try {
    return (await client.workspaceStatus(id)).changes;
  } catch {
    return []; // a lost mount: nothing to report, the Workspace is discarded anyway
  }
}

async function discard(client: ToolCallHost, store: Store, id: string): Promise<void> {
  const stateDir = `${store.path}.d/executions`;
  for (const e of runningExecutions(stateDir, id)) await stopExecutionQuietly(stateDir, e.id);
  await client.endWorkspace(id, { discard: true });
}

async function stopExecutionQuietly(stateDir: string, id: string): Promise<void> {
  try {
    await stopExecution(stateDir, id, { graceMs: 500 });
  } catch {
    /* ended (and forgotten) meanwhile */
  }
}

/**
 * A Workspace owned by this process that outlives one call (the MCP server's write/patch tools
 * fill it over several requests, then commit or discard it). Like a tool call's, it is ended by
 * the next call once this process is gone.
 */
export async function openOwnedWorkspace(client: ToolCallHost, store: Store, branch: string, opts: Pick<ToolCallOptions, 'projection' | 'backend' | 'at'> = {}): Promise<string> {
  await sweepOrphans(client, store);
  return toHex((await createOwned(client, store, branch, opts)).id);
}

type Laps = ((step: string) => void) & { phases: Record<string, number> };

/** Wall ms per step since the previous one. */
function laps(t0: number): Laps {
  let last = t0;
  const lap = ((step: string) => {
    const now = performance.now();
    lap.phases[step] = (lap.phases[step] ?? 0) + (now - last);
    last = now;
  }) as Laps;
  lap.phases = {};
  return lap;
}

export async function runToolCall(client: ToolCallHost, store: Store, branch: string, fn: (ws: ToolCallWorkspace) => Promise<ToolCallDecision> | ToolCallDecision, opts: ToolCallOptions = {}): Promise<ToolCallResult> {
  const t0 = performance.now();
  const cleaned = await sweepOrphans(client, store);
  const { signal, dispose } = callSignal(opts);
  try {
    if (signal.aborted) throw abortError(signal);
    const lap = laps(t0);
    lap('sweep');
    return { ...(await callIn(client, store, branch, fn, opts, signal, t0, cleaned, lap)), phases: lap.phases };
  } finally {
    dispose();
    refillStandby(client, store, branch, opts);
  }
}

async function callIn(
  client: ToolCallHost,
  store: Store,
  branch: string,
  fn: (ws: ToolCallWorkspace) => Promise<ToolCallDecision> | ToolCallDecision,
  opts: ToolCallOptions,
  signal: AbortSignal,
  t0: number,
  cleaned: string[],
  lap: Laps,
): Promise<Omit<ToolCallResult, 'phases'>> {
  const w = await createOwned(client, store, branch, opts);
  lap('create');
  const id = toHex(w.id);
  const own = (outcome: ToolCallOutcome): Receipt => ({
    operation: 'tool.call',
    outcome,
    ms: performance.now() - t0,
    phases: {},
    objectsInserted: 0,
    objectsReused: 0,
    bytesInserted: 0,
    bytesReused: 0,
    semanticGrowth: 0,
    allocatedGrowth: 0,
  });
  let decision: ToolCallDecision;
  const ws = makeWorkspace(client, w, branch, signal);
  const pending = Promise.resolve().then(() => fn(ws));
  pending.catch(() => {}); // after an abort its rejection is expected and ignored
  try {
    decision = await untilAborted(pending, signal);
    lap('fn');
  } catch (e) {
    if (signal.aborted) await settle(store, id, pending);
    const diff = await changesOf(client, id);
    await discard(client, store, id);
    if (e instanceof LayerFsError && e.code === 'ERR_ABORTED' && signal.aborted) {
      const outcome = e.details.reason === 'timeout' ? 'TimedOut' : 'Aborted';
      return { outcome, diff, receipt: client.monitor.record(own(outcome)), cleaned };
    }
    throw e;
  }
  const diff = await changesOf(client, id);
  lap('status');
  const finish = async (end: () => Promise<unknown>) => {
    if (opts.standby && opts.at === undefined) endInBackground(client, end);
    else await end();
    lap('end');
  };
  if (!decision || !decision.keep) {
    await finish(() => discard(client, store, id));
    return { outcome: 'Discarded', diff, receipt: client.monitor.record(own('Discarded')), cleaned };
  }
  let r: CommitResult;
  try {
    r = await client.commitWorkspace(id, { message: decision.message, metadata: decision.metadata, author: decision.author, strict: opts.strict });
    lap('commit');
  } catch (e) {
    // The work is not thrown away: the Workspace is handed over, its id on the error.
    store.writeSync(() => setWorkspaceOwner(store, w.id, null));
    if (e instanceof LayerFsError) e.details.workspace = id;
    throw e;
  }
  if (r.outcome === 'Created' || r.outcome === 'UpToDate') {
    await finish(() => client.endWorkspace(id, { discard: true }));
    return { outcome: r.outcome, ...(r.outcome === 'Created' ? { commit: r.commit } : {}), diff, receipt: r, cleaned };
  }
  // Not published: the work stays in the Workspace, which is no longer this call's to end.
  store.writeSync(() => setWorkspaceOwner(store, w.id, null));
  return { outcome: r.outcome as ToolCallOutcome, diff, workspace: id, receipt: r, cleaned };
}
