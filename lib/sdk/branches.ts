/** Branches and their Commits: fork, list, log, and Add (publishing a Branch head as the next Layer). */
import { toHex } from '../format/hex.js';
import {
  addToLayerStack,
  branchLog,
  branchRoot,
  forkBranch as fork,
  getLayerStack,
  keptCommits,
  listBranches,
  resolveBranch,
  resolveLayerStack,
  touchesPath,
  type BranchRow,
} from '../history/index.js';
import type { Store } from '../store/store.js';
import { createResolutionWorkspace } from '../workspace/index.js';
import type { ClientContext } from './context.js';
import { forkSource, type ForkFrom } from './fork-source.js';
import { commitLog } from './log.js';
import { branchInfo, commitInfo, layerInfo } from './convert.js';
import { conflictInfos, withReconcilePhase } from './reconcile.js';
import { layerRow } from './states.js';
import type { AddResult, BranchInfo, CommitInfo } from './types.js';
import type { RetentionContext } from './retention.js';
import { endWorkspace, workspaceInfoOf } from './workspaces.js';

export function branchInfoOf(store: Store, b: BranchRow): BranchInfo {
  return branchInfo(b, getLayerStack(store, b.layerStackId)?.name ?? '', branchRoot(store, b));
}

export function forkBranch(ctx: ClientContext, opts: ForkFrom): BranchInfo {
  const t0 = performance.now();
  const source = forkSource(ctx.store, opts);
  const a0 = ctx.store.meter.allocatedGrowth;
  const b = fork(ctx.store, opts.name, source);
  ctx.monitor.record(ctx.receipt('branch.fork', 'Created', t0, a0, null));
  return branchInfoOf(ctx.store, b);
}

export function branches(store: Store, opts: { layerStack?: string }): BranchInfo[] {
  return store.read(() => {
    const stackId = opts.layerStack !== undefined ? resolveLayerStack(store, opts.layerStack).id : undefined;
    return listBranches(store, stackId).map((b) => branchInfoOf(store, b));
  });
}

export function log(store: Store, branch: string, opts: { limit?: number; path?: string }): CommitInfo[] {
  return commitLog(store, branch, opts, (from, to, path) => touchesPath(store, from, to, path));
}

export function commits(store: Store, opts: { branch?: string }): CommitInfo[] {
  if (opts.branch !== undefined) return log(store, opts.branch, {});
  return store.read(() => {
    const seen = new Map<string, CommitInfo>();
    const kept = keptCommits(store);
    for (const b of listBranches(store)) for (const c of branchLog(store, b)) seen.set(toHex(c.id), { ...commitInfo(c), pruned: !kept.has(toHex(c.id)) });
    return [...seen.values()].sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
  });
}

export function add(ctx: ClientContext, branch: string, opts: { expectedHead?: string; strict?: boolean; resolveAt?: string }): AddResult {
  const store = ctx.store;
  const t0 = performance.now();
  const a0 = store.meter.allocatedGrowth;
  const b = resolveBranch(store, branch);
  const expected = opts.expectedHead !== undefined ? layerRow(ctx, opts.expectedHead).id : undefined;
  const r = addToLayerStack(store, b.id, { expectedHead: expected, strict: opts.strict });
  const base = ctx.receipt('layerstack.add', r.outcome, t0, a0, null);
  const stack = getLayerStack(store, b.layerStackId)?.name ?? '';
  let out: AddResult;
  switch (r.outcome) {
    case 'Added':
      out = { ...base, outcome: 'Added', layer: layerInfo(r.layer, stack), previousHead: toHex(r.previousHead), ...(r.reconciled ? { reconciled: { ...r.reconciled, retries: 0 } } : {}) };
      withReconcilePhase(out, r.reconciled?.ms);
      break;
    case 'Conflicted': {
      const ws = createResolutionWorkspace(store, b, r, opts.resolveAt);
      out = { ...base, outcome: 'Conflicted', head: toHex(r.head), conflicts: conflictInfos(store, ws.id), resolutionWorkspace: workspaceInfoOf(store, ws) };
      break;
    }
    case 'UpToDate':
      out = { ...base, outcome: 'UpToDate', layer: layerInfo(r.layer, stack) };
      break;
    case 'NoChanges':
      out = { ...base, outcome: 'NoChanges', head: toHex(r.head) };
      break;
    default:
      out = { ...base, outcome: 'HeadMoved', expected: toHex(r.expected), actual: toHex(r.actual) };
  }
  return ctx.monitor.record(out) as AddResult;
}

/** What deletion and retention need of the Client: Workspaces end and Branches read as the Client does. */
export function retentionContext(ctx: ClientContext): RetentionContext {
  return {
    store: ctx.store,
    receipt: (op, outcome, t0, a0) => ctx.receipt(op, outcome, t0, a0, null),
    record: (r) => ctx.monitor.record(r) as typeof r,
    endWorkspace: (ref, opts) => endWorkspace(ctx, ref, opts),
    branchInfo: (ref) => ctx.store.read(() => branchInfoOf(ctx.store, resolveBranch(ctx.store, ref))),
  };
}
