/**
 * Add: publish a Branch head as the next Layer of its LayerStack. It copies no objects and never
 * silently drops Layers added since the Branch forked: when the LayerStack head is no longer the
 * Branch's base (or a plain Layer this same Branch added earlier), the Branch's changes since
 * then are reconciled three-way with the head (reconcile.ts) and the result is added, or the add
 * answers Conflicted and adds nothing. `strict` (or an expected head) answers HeadMoved instead.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { Store } from '../store/store.js';
import type { ObjectWriter } from '../store/objects.js';
import { branchLog, getBranch, getCommit, isInHistory } from './branches.js';
import { reconcileStates, type ReconcileConflict } from './reconcile.js';
import type { BranchRow, CommitRow } from './rows.js';
import { layerId } from './ids.js';
import { getLayer, getLayerStack } from './layerstacks.js';
import { LAYER_COLUMNS, type LayerRow } from './rows.js';

export type AddOutcome =
  | { outcome: 'Added'; layer: LayerRow; previousHead: Buffer; reconciled?: { merged: string[]; ms: number } }
  | { outcome: 'Conflicted'; conflicts: ReconcileConflict[]; head: Buffer; baseRoot: Buffer }
  | { outcome: 'UpToDate'; layer: LayerRow }
  | { outcome: 'NoChanges'; head: Buffer }
  | { outcome: 'HeadMoved'; expected: Buffer; actual: Buffer };

/**
 * The root the Branch's changes are measured from: the newest Commit of the Branch's history
 * that a Layer added since its base took, or descends from (a sibling Branch forked from the
 * same Commit shares its edits; measuring from the base Layer would count them as changes on
 * both sides), else the base Layer's. Every Add is reconciled onto the head, so the head holds
 * what any such Layer took.
 */
function mergeBaseRoot(store: Store, b: BranchRow): Buffer {
  const depth = new Map<string, number>();
  branchLog(store, b).forEach((c, i) => depth.set(toHex(c.id), i));
  let best: number | undefined;
  const seen = new Set<string>();
  for (let layer = getLayer(store, getLayerStack(store, b.layerStackId)!.headLayerId); layer && !layer.id.equals(b.baseLayerId); layer = layer.parentLayerId ? getLayer(store, layer.parentLayerId) : undefined) {
    for (let id = layer.sourceCommitId; id && !seen.has(toHex(id)); id = getCommit(store, id)?.parentCommitId ?? null) {
      const hex = toHex(id);
      seen.add(hex);
      const d = depth.get(hex);
      if (d !== undefined) {
        if (best === undefined || d < best) best = d;
        break;
      }
    }
  }
  if (best !== undefined) return branchLog(store, b, best + 1)[best]!.rootId;
  return getLayer(store, b.baseLayerId)!.rootId;
}

class Refused {
  constructor(readonly outcome: AddOutcome) {}
}

export function addToLayerStack(store: Store, branchId: Buffer, opts: { expectedHead?: Buffer; strict?: boolean } = {}): AddOutcome {
  try {
    return addInTransaction(store, branchId, opts);
  } catch (e) {
    // A conflicted add rolls back what reconciling wrote: it adds nothing at all.
    if (e instanceof Refused) return e.outcome;
    throw e;
  }
}

function addInTransaction(store: Store, branchId: Buffer, opts: { expectedHead?: Buffer; strict?: boolean }): AddOutcome {
  return store.writeSync((w) => {
    const b = getBranch(store, branchId);
    if (!b) throw new LayerFsError('ERR_NOT_FOUND', `no Branch ${toHex(branchId)}`, { id: toHex(branchId) });
    const stack = getLayerStack(store, b.layerStackId)!;
    const head = getLayer(store, stack.headLayerId)!;
    if (!b.headCommitId) return { outcome: 'NoChanges', head: head.id };
    const already = store.db.prepare(`SELECT ${LAYER_COLUMNS} FROM layers WHERE source_branch_id = ? AND source_commit_id = ?`).get(b.id, b.headCommitId) as LayerRow | undefined;
    if (already) return { outcome: 'UpToDate', layer: already };
    const commit = getCommit(store, b.headCommitId)!;
    const base = getLayer(store, b.baseLayerId)!;
    if (opts.expectedHead && !opts.expectedHead.equals(head.id)) return { outcome: 'HeadMoved', expected: opts.expectedHead, actual: head.id };
    // A head this Branch added continues it only if that Layer holds exactly its Commit's state
    // (not a reconciled one, which holds others' changes too).
    const continues =
      head.id.equals(base.id) ||
      (head.sourceBranchId !== null && head.sourceBranchId.equals(b.id) && head.sourceCommitId !== null && isInHistory(store, b, head.sourceCommitId) && getCommit(store, head.sourceCommitId)!.rootId.equals(head.rootId));
    let root = commit.rootId;
    let reconciled: { merged: string[]; ms: number } | undefined;
    if (!continues) {
      if (opts.strict) return { outcome: 'HeadMoved', expected: base.id, actual: head.id };
      const r = reconcileWithStack(store, w, b, commit, head.rootId);
      if (r.outcome === 'Conflicted') throw new Refused({ ...r, head: head.id });
      root = r.root;
      reconciled = { merged: r.merged, ms: r.ms };
    }
    if (root.equals(head.rootId)) return { outcome: 'NoChanges', head: head.id };
    const id = layerId(stack.id, head.id, root);
    store.db
      .prepare('INSERT INTO layers (id, layer_stack_id, seq, parent_layer_id, root_id, source_branch_id, source_commit_id, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(id, stack.id, head.seq + 1, head.id, root, b.id, commit.id, Date.now());
    // The head moves last, by compare-and-swap, in the same transaction as the Layer row.
    const r = store.db.prepare('UPDATE layer_stacks SET head_layer_id = ? WHERE id = ? AND head_layer_id = ?').run(id, stack.id, head.id);
    if (r.changes !== 1) throw new LayerFsError('ERR_BUSY', 'the LayerStack head moved during Add');
    return { outcome: 'Added', layer: getLayer(store, id)!, previousHead: head.id, ...(reconciled ? { reconciled } : {}) };
  });
}

function reconcileWithStack(store: Store, w: ObjectWriter, b: BranchRow, commit: CommitRow, headRoot: Buffer): { outcome: 'Merged'; root: Buffer; merged: string[]; ms: number } | { outcome: 'Conflicted'; conflicts: ReconcileConflict[]; baseRoot: Buffer } {
  const t0 = performance.now();
  const baseRoot = mergeBaseRoot(store, b);
  const r = reconcileStates(store, w, baseRoot, headRoot, commit.rootId);
  if (r.outcome === 'Conflicted') return { outcome: 'Conflicted', conflicts: r.conflicts, baseRoot };
  w.flush();
  return { outcome: 'Merged', root: r.root, merged: r.merged, ms: performance.now() - t0 };
}
