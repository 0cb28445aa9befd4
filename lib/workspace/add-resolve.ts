/**
 * A Conflicted `layerstack add` leaves a resolution Workspace: a new Branch forked from the
 * LayerStack head, materialized, holding the Branch's changes as uncommitted work (where both
 * sides changed a path, the Branch's version) and the conflicts to settle. Once resolved and
 * committed, adding that Branch continues the LayerStack head, with nothing left to reconcile.
 */
import { dirname, join } from 'node:path';
import { toHex } from '../format/hex.js';
import { forkBranch, getCommit, getLayer, reconcileStates, uuidv7, type BranchRow, type ReconcileConflict } from '../history/index.js';
import type { Store } from '../store/index.js';
import { saveConflicts } from './conflicts.js';
import { createWorkspace } from './manager.js';
import type { WorkspaceRow } from './rows.js';
import { writeDifference } from './sync.js';

export function createResolutionWorkspace(store: Store, branch: BranchRow, conflict: { head: Buffer; baseRoot: Buffer; conflicts: ReconcileConflict[] }, at?: string): WorkspaceRow {
  const tag = toHex(uuidv7()).slice(-8);
  const resolving = forkBranch(store, `${branch.name}-resolve-${tag}`, { layer: conflict.head });
  const ws = createWorkspace(store, resolving, at ?? join(dirname(store.path), `${branch.name}-resolve-${tag}`), 'materialize');
  const headRoot = getLayer(store, conflict.head)!.rootId;
  const branchState = getCommit(store, branch.headCommitId!)!.rootId;
  // The same reconciliation, taking the Branch's version wherever both sides changed a path.
  const partial = store.writeSync((w) => reconcileStates(store, w, conflict.baseRoot, headRoot, branchState, { resolved: new Set(conflict.conflicts.map((c) => c.path)) }));
  if (partial.outcome === 'Merged') store.read(() => writeDifference(store, ws.path, headRoot, partial.root));
  saveConflicts(store, ws.id, null, conflict.conflicts);
  return ws;
}
