/**
 * Workspaces through the Projection seam (lib/workspace/projection.ts): create, list, status,
 * commit, end and executions, the same calls for every projection. Nothing here asks which
 * projection a Workspace has; each answer is turned into the public types and receipts.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { getBranch, normalizeNote, resolveBranch } from '../history/index.js';
import type { ExportProgress } from '../store/export.js';
import type { Store } from '../store/store.js';
import {
  chooseProjection,
  listWorkspaces,
  projectionOf,
  recordEnded,
  resolveWorkspace,
  runExecution,
  startDetached,
  workspaceStates,
  type CommitMeasure,
  type ExecutionInfo,
  type ProjectedCommit,
  type RemoveProgress,
  type WorkspaceRow,
  type WorkspaceState,
} from '../workspace/index.js';
import { defaultAuthor } from './author.js';
import type { ClientContext } from './context.js';
import { commitInfo, workspaceInfo } from './convert.js';
import { conflictInfos, withReconcilePhase } from './reconcile.js';
import { attachWorkspace, checkSandbox, execOutcome, planFor, sandboxNameOf } from './sandbox.js';
import { endPolicy } from './tool-call.js';
import type { CommitOptions, CommitResult, EndResult, WorkspaceInfo, WorkspaceStatus } from './types.js';

export function workspaceInfoOf(store: Store, w: WorkspaceRow, state?: WorkspaceState): WorkspaceInfo {
  const info = workspaceInfo(w, getBranch(store, w.branchId)?.name ?? '', state ?? workspaceStates(store.path, [w]).get(toHex(w.id))!);
  const sandbox = sandboxNameOf(store, w);
  return sandbox === null ? info : { ...info, sandbox };
}

export type CreateWorkspaceOptions = { at: string; projection?: 'materialize' | 'fuse' | 'auto'; backend?: 'kernel'; sandbox?: string; onProgress?: (p: ExportProgress) => void };

export async function createWorkspace(ctx: ClientContext, branch: string, opts: CreateWorkspaceOptions): Promise<WorkspaceInfo> {
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const b = resolveBranch(ctx.store, branch);
  checkSandbox(ctx.store, opts.sandbox);
  const projection = chooseProjection(opts.projection);
  const w = await projectionOf(projection).create(ctx.store, b, opts.at, { ...(opts.backend ? { backend: opts.backend } : {}), ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) });
  if (opts.sandbox !== undefined) attachWorkspace(ctx.store, toHex(w.id), opts.sandbox);
  ctx.monitor.record(ctx.receipt('workspace.create', 'Created', t0, a0, null));
  return workspaceInfoOf(ctx.store, w);
}

export function workspaces(store: Store, opts: { branch?: string }): WorkspaceInfo[] {
  const rows = store.read(() => {
    const b = opts.branch !== undefined ? resolveBranch(store, opts.branch).id : undefined;
    return listWorkspaces(store, b);
  });
  const states = workspaceStates(store.path, rows);
  return rows.map((w) => workspaceInfoOf(store, w, states.get(toHex(w.id))));
}

export async function workspaceStatus(store: Store, ref: string): Promise<WorkspaceStatus> {
  const w = resolveWorkspace(store, ref);
  const s = await projectionOf(w.projection).changes(store, w);
  return { workspace: workspaceInfoOf(store, w), clean: s.changes.length === 0, changes: s.changes, skipped: s.skipped, ...(s.truncated ? { truncated: true } : {}) };
}

export async function commitWorkspace(ctx: ClientContext, ref: string, opts: CommitOptions): Promise<CommitResult> {
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const note = normalizeNote(opts, defaultAuthor());
  const w = resolveWorkspace(ctx.store, ref);
  if (opts.exclude?.some((p) => typeof p !== 'string' || p.trim() === '')) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', 'an exclude pattern must be a non-empty string', { argument: 'exclude' });
  }
  const { outcome, measure } = await projectionOf(w.projection).commit(ctx.store, w, ctx.stateDir, { note, strict: opts.strict ?? false, ...(opts.exclude ? { exclude: opts.exclude } : {}) });
  return ctx.monitor.record(commitResult(ctx, w, outcome, measure, t0, a0)) as CommitResult;
}

/** A projection's commit as the public result: hex ids, and its receipt measured as the projection says. */
function commitResult(ctx: ClientContext, w: WorkspaceRow, r: ProjectedCommit, measure: CommitMeasure, t0: number, a0: number): CommitResult {
  const base = ctx.receipt('workspace.commit', r.outcome, t0, a0, r.outcome === 'Created' ? r.write : null, measure.phases);
  if (measure.remote) {
    // The daemon's own time (its write transaction and cut) and allocated growth: the rest of ms is the round trip.
    base.phases = measure.remote.ms === undefined ? {} : { daemon: measure.remote.ms };
    base.allocatedGrowth = measure.remote.allocatedGrowth;
  }
  withReconcilePhase(base, measure.reconcileMs);
  const hex = (b: Buffer | null): string | null => (b ? toHex(b) : null);
  switch (r.outcome) {
    case 'Created': {
      // A new head is always kept by retention.
      const out: CommitResult = { ...base, outcome: 'Created', commit: { ...commitInfo(r.commit), pruned: false }, previousHead: hex(r.previousHead), changedPaths: r.changedPaths };
      if (r.reconciled) out.reconciled = r.reconciled;
      return out;
    }
    case 'UpToDate':
      return { ...base, outcome: 'UpToDate', head: hex(r.head) };
    case 'Busy':
      return { ...base, outcome: 'Busy', executions: r.executions };
    case 'Conflicted':
      return { ...base, outcome: 'Conflicted', head: hex(r.head), conflicts: conflictInfos(ctx.store, w.id) };
    default:
      return { ...base, outcome: 'HeadMoved', expected: hex(r.expected), actual: hex(r.actual) };
  }
}

export async function endWorkspace(ctx: ClientContext, ref: string, opts: { discard?: boolean; onProgress?: (p: RemoveProgress) => void }): Promise<EndResult> {
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const w = resolveWorkspace(ctx.store, ref);
  opts = endPolicy(ctx.store, w, opts);
  const r = await projectionOf(w.projection).end(ctx.store, w, opts, ctx.stateDir);
  if (r.outcome === 'Ended') recordEnded(ctx.store.path, { id: toHex(w.id), path: w.path });
  return ctx.monitor.record({ ...ctx.receipt('workspace.end', r.outcome, t0, a0, null), ...r } as EndResult) as EndResult;
}

export async function exec(ctx: ClientContext, ref: string, argv: string[], opts: { env?: NodeJS.ProcessEnv }): Promise<ExecutionInfo> {
  const t0 = performance.now();
  const w = resolveWorkspace(ctx.store, ref);
  const e = await runExecution({ stateDir: ctx.stateDir, workspaceId: toHex(w.id), cwd: projectionOf(w.projection).execDir(w), argv, env: opts.env, sandbox: planFor(ctx.store, w) });
  // A sandboxed execution's receipt carries its resource use (the cgroup's figures).
  if (e.resources) ctx.monitor.record({ ...ctx.receipt('workspace.exec', execOutcome(e), t0, ctx.store.meter.allocatedGrowth, null), execution: e.id, sandbox: e.sandbox, resources: e.resources });
  return e;
}

export function execDetached(ctx: ClientContext, ref: string, argv: string[], opts: { env?: NodeJS.ProcessEnv }): ExecutionInfo {
  const w = resolveWorkspace(ctx.store, ref);
  return startDetached({ stateDir: ctx.stateDir, workspaceId: toHex(w.id), cwd: projectionOf(w.projection).execDir(w), argv, env: opts.env, sandbox: planFor(ctx.store, w) });
}
