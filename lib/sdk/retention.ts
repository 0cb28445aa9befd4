/**
 * Deleting and renaming Branches and LayerStacks, pins, the retention policy and `db gc`, for
 * the Client (which keeps only thin delegating methods). Every mutation leaves a receipt.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import {
  addPin,
  countUnreachableCommits,
  deleteBranchRow,
  deleteLayerStackRows,
  getBranch,
  getCommit,
  getLayer,
  getPolicy,
  keptStates,
  listPins,
  listTombstones,
  recordPruned,
  removePin,
  removeUnreachableCommits,
  renameBranch,
  resolveBranch,
  resolveLayerStack,
  setPolicy,
} from '../history/index.js';
import type { Receipt } from '../monitor/monitor.js';
import type { GcProgress } from '../store/gc.js';
import type { Store } from '../store/store.js';
import { listWorkspaces, maintenanceClaim, openWorkspacesOn, workspaceRoots } from '../workspace/index.js';
import { resolveState } from './refs.js';
import type { BranchDeleteResult, BranchRenameResult, DeletedInfo, GcReceipt, LayerStackDeleteResult, PinInfo, PinResult, RetentionInfo } from './retention-types.js';
import type { BranchInfo, EndResult } from './types.js';

/** What these operations need of the Client. */
export interface RetentionContext {
  store: Store;
  receipt(operation: string, outcome: string, t0: number, allocated0: number): Receipt;
  record<T extends Receipt>(r: T): T;
  endWorkspace(ref: string, opts: { discard?: boolean }): Promise<EndResult>;
  branchInfo(ref: string): BranchInfo;
}

const iso = (ms: number) => new Date(ms).toISOString();

export async function deleteBranch(ctx: RetentionContext, ref: string, opts: { force?: boolean; discard?: boolean }): Promise<BranchDeleteResult> {
  if (opts.discard && !opts.force) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'discard needs force', { argument: 'discard', hint: 'give --force --discard' });
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const b = resolveBranch(ctx.store, ref);
  const ended: string[] = [];
  if (opts.force) {
    for (const w of listWorkspaces(ctx.store, b.id)) {
      const id = toHex(w.id);
      const r = await ctx.endWorkspace(id, { discard: opts.discard });
      if (r.outcome === 'Dirty') return ctx.record({ ...ctx.receipt('branch.delete', 'Dirty', t0, a0), outcome: 'Dirty' as const, workspace: id, changes: r.changes, reason: r.reason, workspacesEnded: ended });
      if (r.outcome === 'Busy') return ctx.record({ ...ctx.receipt('branch.delete', 'Busy', t0, a0), outcome: 'Busy' as const, workspace: id, executions: r.executions, workspacesEnded: ended });
      ended.push(id);
    }
  }
  const t = deleteBranchRow(ctx.store, b.id, (ids) => openWorkspacesOn(ctx.store, ids));
  return ctx.record({
    ...ctx.receipt('branch.delete', 'Deleted', t0, a0),
    outcome: 'Deleted' as const,
    branch: t.name,
    id: toHex(t.id),
    layerStack: t.layerStack,
    head: t.headId ? toHex(t.headId) : null,
    deletedAt: iso(t.deletedMs),
    workspacesEnded: ended,
  });
}

export function renameBranchOp(ctx: RetentionContext, ref: string, name: string): BranchRenameResult {
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const b = resolveBranch(ctx.store, ref);
  renameBranch(ctx.store, b.id, name);
  return ctx.record({ ...ctx.receipt('branch.rename', 'Renamed', t0, a0), outcome: 'Renamed' as const, previousName: b.name, branch: ctx.branchInfo(toHex(b.id)) });
}

export function deleteLayerStack(ctx: RetentionContext, ref: string): LayerStackDeleteResult {
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const s = resolveLayerStack(ctx.store, ref);
  const r = deleteLayerStackRows(ctx.store, s.id, (ids) => openWorkspacesOn(ctx.store, ids));
  return ctx.record({
    ...ctx.receipt('layerstack.delete', 'Deleted', t0, a0),
    outcome: 'Deleted' as const,
    layerStack: s.name,
    id: toHex(s.id),
    branches: r.branches.map((b) => b.name),
    layers: r.layers,
    commits: r.commits,
    deletedAt: iso(r.layerStack.deletedMs),
  });
}

export function deleted(store: Store): DeletedInfo[] {
  return listTombstones(store).map((t) => ({ kind: t.kind, id: toHex(t.id), name: t.name, layerStack: t.layerStack, head: t.headId ? toHex(t.headId) : null, deletedAt: iso(t.deletedMs) }));
}

/** The `kind:id` a pin records for a state reference: a Branch stands for its head (or base Layer). */
function pinnedState(store: Store, ref: string): { state: string; rootId: Buffer } {
  if (/^(layer|commit):[0-9a-f]{64}$/.test(ref)) {
    const [kind, hex] = ref.split(':') as [string, string];
    const id = Buffer.from(hex, 'hex');
    const rootId = kind === 'layer' ? getLayer(store, id)?.rootId : getCommit(store, id)?.rootId;
    if (rootId) return { state: ref, rootId };
  }
  const s = store.read(() => resolveState(store, ref));
  if (s.kind !== 'branch') return { state: `${s.kind}:${toHex(s.id)}`, rootId: s.rootId };
  const b = getBranch(store, s.id)!;
  return b.headCommitId ? { state: `commit:${toHex(b.headCommitId)}`, rootId: s.rootId } : { state: `layer:${toHex(b.baseLayerId)}`, rootId: s.rootId };
}

export function pin(ctx: RetentionContext, ref: string): PinResult {
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const p = pinnedState(ctx.store, ref);
  const outcome = addPin(ctx.store, p.state, p.rootId) ? ('Pinned' as const) : ('AlreadyPinned' as const);
  return ctx.record({ ...ctx.receipt('pin', outcome, t0, a0), outcome, state: p.state });
}

export function unpin(ctx: RetentionContext, ref: string): PinResult {
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  // A pin of a state whose row is gone (a deleted Branch's Commit) is named as `kind:id`.
  const state = listPins(ctx.store).some((p) => p.state === ref) ? ref : pinnedState(ctx.store, ref).state;
  const outcome = removePin(ctx.store, state) ? ('Unpinned' as const) : ('NotPinned' as const);
  return ctx.record({ ...ctx.receipt('unpin', outcome, t0, a0), outcome, state });
}

export function pins(store: Store): PinInfo[] {
  return listPins(store).map((p) => ({ state: p.state, rootId: toHex(p.rootId), createdAt: iso(p.createdMs) }));
}

export function retention(store: Store): RetentionInfo {
  return getPolicy(store);
}

export function setRetention(ctx: RetentionContext, p: { branchCommits?: number | null; olderThanMs?: number | null }): RetentionInfo & Receipt {
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const old = getPolicy(ctx.store);
  const r = setPolicy(ctx.store, { branchCommits: p.branchCommits === undefined ? old.branchCommits : p.branchCommits, olderThanMs: p.olderThanMs === undefined ? old.olderThanMs : p.olderThanMs });
  return ctx.record({ ...ctx.receipt('retention.set', 'Updated', t0, a0), ...r });
}

export async function gc(ctx: RetentionContext, opts: { dryRun?: boolean; vacuum?: boolean; batchObjects?: number; onProgress?: (p: GcProgress) => void }): Promise<GcReceipt> {
  const t0 = performance.now();
  const a0 = ctx.store.meter.allocatedGrowth;
  const s = ctx.store;
  const r = await s.gc({
    roots: () => keptStates(s, workspaceRoots(s)),
    beforeSweep: (live) => recordPruned(s, live),
    commits: { count: () => countUnreachableCommits(s), remove: (batch) => removeUnreachableCommits(s, batch) },
    dryRun: opts.dryRun,
    vacuum: opts.vacuum,
    batchObjects: opts.batchObjects,
    onProgress: opts.onProgress,
  }, maintenanceClaim());
  const outcome = r.dryRun ? ('DryRun' as const) : ('Collected' as const);
  const { dryRun: _d, ...rest } = r;
  return ctx.record({ ...ctx.receipt('db.gc', outcome, t0, a0), ...rest, outcome });
}
