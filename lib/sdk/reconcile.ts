/** The SDK side of reconciling commits: conflicts as plain objects, resolve, update. */
import { toHex } from '../format/hex.js';
import type { Receipt } from '../monitor/monitor.js';
import type { Store } from '../store/store.js';
import { listConflicts, resolveConflict, updateWorkspace, type ConflictRecord, type Resolution, type UpdateOutcome, type WorkspaceRow } from '../workspace/index.js';
import type { ConflictInfo } from './types.js';

function info(c: ConflictRecord): ConflictInfo {
  return {
    id: c.id,
    path: c.path,
    kind: c.kind,
    ...(c.headPath ? { headPath: c.headPath } : {}),
    message: c.message,
    ...(c.lines ? { lines: c.lines } : {}),
    ...(c.ranges ? { ranges: c.ranges } : {}),
    headCommitId: c.headCommitId ? toHex(c.headCommitId) : null,
    resolution: c.resolution,
    createdAt: new Date(c.createdMs).toISOString(),
  };
}

export function conflictInfos(store: Store, workspaceId: Buffer): ConflictInfo[] {
  return listConflicts(store, workspaceId).map(info);
}

export function resolveConflictOf(store: Store, ws: WorkspaceRow, id: number, how: Resolution): ConflictInfo {
  return info(resolveConflict(store, ws, id, how));
}

export async function updateWorkspaceOf(store: Store, ws: WorkspaceRow, stateDir: string): Promise<{ outcome: string; head?: string | null; written?: number; executions?: string[] }> {
  const r: UpdateOutcome = await updateWorkspace(store, ws, stateDir);
  if (r.outcome === 'Busy') return r;
  return { ...r, head: r.head ? toHex(r.head) : null };
}

/** Reconciliation time as its own receipt phase, taken out of publish (where it ran). */
export function withReconcilePhase(r: Receipt, ms: number | undefined): void {
  if (ms === undefined) return;
  r.phases.reconcile = ms;
  if (r.phases.publish !== undefined) r.phases.publish = Math.max(0, r.phases.publish - ms);
}
