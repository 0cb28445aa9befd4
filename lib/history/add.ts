/**
 * Add: publish a Branch head as the next Layer of its LayerStack. It copies no objects, never
 * merges, and never silently drops Layers added since the Branch forked: the LayerStack head
 * must still be the Branch's base (or a Layer this same Branch added earlier), else HeadMoved.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { Store } from '../store/index.js';
import { getBranch, getCommit, isInHistory } from './branches.js';
import { layerId } from './ids.js';
import { getLayer, getLayerStack } from './layerstacks.js';
import { LAYER_COLUMNS, type LayerRow } from './rows.js';

export type AddOutcome =
  | { outcome: 'Added'; layer: LayerRow; previousHead: Buffer }
  | { outcome: 'UpToDate'; layer: LayerRow }
  | { outcome: 'NoChanges'; head: Buffer }
  | { outcome: 'HeadMoved'; expected: Buffer; actual: Buffer };

export function addBranch(store: Store, branchId: Buffer, opts: { expectedHead?: Buffer } = {}): AddOutcome {
  return store.writeSync(() => {
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
    const continues = head.id.equals(base.id) || (head.sourceBranchId !== null && head.sourceBranchId.equals(b.id) && head.sourceCommitId !== null && isInHistory(store, b, head.sourceCommitId));
    if (!continues) return { outcome: 'HeadMoved', expected: base.id, actual: head.id };
    if (commit.rootId.equals(head.rootId)) return { outcome: 'NoChanges', head: head.id };
    const id = layerId(stack.id, head.id, commit.rootId);
    store.db
      .prepare('INSERT INTO layers (id, layer_stack_id, seq, parent_layer_id, root_id, source_branch_id, source_commit_id, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(id, stack.id, head.seq + 1, head.id, commit.rootId, b.id, commit.id, Date.now());
    // The head moves last, by compare-and-swap, in the same transaction as the Layer row.
    const r = store.db.prepare('UPDATE layer_stacks SET head_layer_id = ? WHERE id = ? AND head_layer_id = ?').run(id, stack.id, head.id);
    if (r.changes !== 1) throw new LayerFsError('ERR_BUSY', 'the LayerStack head moved during Add');
    return { outcome: 'Added', layer: getLayer(store, id)!, previousHead: head.id };
  });
}
