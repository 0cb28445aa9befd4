/**
 * `workspace update`: moves a clean materialized Workspace onto its Branch's current head,
 * writing in what changed there (the page-tree diff of the two states), without a Commit.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { branchRoot, getBranch } from '../history/index.js';
import type { Store } from '../store/index.js';
import { loadCache } from './cache.js';
import { runningExecutions } from './exec.js';
import { workspaceStatus } from './manager.js';
import { setWorkspaceBase, type WorkspaceRow } from './rows.js';
import { syncProjection } from './sync.js';

export type UpdateOutcome = { outcome: 'Updated'; head: Buffer | null; written: number } | { outcome: 'UpToDate'; head: Buffer | null } | { outcome: 'Busy'; executions: string[] };

export async function updateWorkspace(store: Store, ws: WorkspaceRow, stateDir: string): Promise<UpdateOutcome> {
  if (ws.projection !== 'materialize') {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', 'workspace update moves materialized Workspaces; a FUSE Workspace moves onto the head when it commits', { id: toHex(ws.id), hint: 'commit the FUSE Workspace (it reconciles), or end it and create a new one' });
  }
  const running = runningExecutions(stateDir, toHex(ws.id));
  if (running.length > 0) return { outcome: 'Busy', executions: running.map((e) => e.id) };
  const { entries } = workspaceStatus(store, ws);
  if (entries.length > 0) {
    throw new LayerFsError('ERR_DIRTY', `the Workspace has ${entries.length} uncommitted change(s)`, { id: toHex(ws.id), hint: 'commit them: a commit reconciles with the moved head and leaves the Workspace on it' });
  }
  return store.write(async () => {
    const b = getBranch(store, ws.branchId)!;
    const root = branchRoot(store, b);
    if (root.equals(ws.baseRootId) && b.baseLayerId.equals(ws.expectedBaseId)) {
      setWorkspaceBase(store, ws.id, ws.baseRootId, b.headCommitId);
      return { outcome: 'UpToDate' as const, head: b.headCommitId };
    }
    const { written } = syncProjection(store, ws.id, ws.path, ws.baseRootId, root, loadCache(store, ws.id));
    setWorkspaceBase(store, ws.id, root, b.headCommitId, b.baseLayerId);
    return { outcome: 'Updated' as const, head: b.headCommitId, written };
  });
}
