/**
 * State references: what users type where a state is expected — a Layer id or prefix, a
 * Commit id or prefix, a Branch name or id (its current state), or a LayerStack name (its head).
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { branchRoot, getBranch, getCommit, getLayer, isPruned, resolveBranch, resolveCommit, resolveLayer, resolveRemoteRef, uniqueByPrefix, type BranchRow } from '../history/index.js';
import type { Store } from '../store/index.js';

export interface ResolvedState {
  kind: 'layer' | 'commit' | 'branch';
  id: Buffer;
  rootId: Buffer;
}

export function resolveState(store: Store, ref: string): ResolvedState {
  if (typeof ref !== 'string' || ref.length === 0) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'a state reference must be a non-empty string');
  if (ref.includes('#')) {
    const l = resolveLayer(store, ref);
    if (l) return { kind: 'layer', id: l.id, rootId: l.rootId };
    throw new LayerFsError('ERR_NOT_FOUND', `no Layer labelled ${JSON.stringify(ref)}`, { id: ref, hint: 'labels are LAYERSTACK#SEQ, as `layerfs query layers` prints them' });
  }
  const remote = resolveRemoteRef(store.db, ref);
  if (remote?.kind === 'layerstack') return { kind: 'layer', id: remote.head!, rootId: getLayer(store, remote.head!)!.rootId };
  if (remote?.head) return { kind: 'commit', id: remote.head, rootId: getCommit(store, remote.head)!.rootId };
  if (remote?.baseLayerId) return { kind: 'layer', id: remote.baseLayerId, rootId: getLayer(store, remote.baseLayerId)!.rootId };
  const layerId = uniqueByPrefix(store.db, 'layers', ref, 32, 'Layer');
  const commit = resolveCommit(store, ref);
  if (layerId && commit) {
    throw new LayerFsError('ERR_AMBIGUOUS_ID', `${ref} matches both a Layer and a Commit`, {
      id: ref,
      candidates: [`layer:${toHex(layerId)}`, `commit:${toHex(commit.id)}`],
      hint: 'give more hex digits',
    });
  }
  if (layerId) return { kind: 'layer', id: layerId, rootId: getLayer(store, layerId)!.rootId };
  if (commit) {
    if (isPruned(store, commit.id) || !store.objects.has(commit.rootId)) {
      throw new LayerFsError('ERR_PRUNED', `the state of Commit ${toHex(commit.id)} was reclaimed by db gc (retention no longer kept it)`, { id: toHex(commit.id), hint: 'pin states to keep them; see `layerfs retention show`' });
    }
    return { kind: 'commit', id: commit.id, rootId: commit.rootId };
  }
  const stackHead = store.db.prepare('SELECT head_layer_id FROM layer_stacks WHERE name = ?').pluck().get(ref) as Buffer | undefined;
  let branch: BranchRow | undefined;
  try {
    branch = resolveBranch(store, ref);
  } catch (e) {
    if (!(e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND')) throw e;
  }
  if (branch && stackHead) {
    throw new LayerFsError('ERR_AMBIGUOUS_ID', `${ref} names both a LayerStack and a Branch`, {
      id: ref,
      candidates: [`layer:${toHex(stackHead)}`, `branch:${toHex(branch.id)}`],
      hint: 'give the Layer or Commit id instead',
    });
  }
  if (branch) return { kind: 'branch', id: branch.id, rootId: branchRoot(store, branch) };
  if (stackHead) return { kind: 'layer', id: stackHead, rootId: getLayer(store, stackHead)!.rootId };
  throw new LayerFsError('ERR_NOT_FOUND', `no Layer, Commit, Branch or LayerStack matches ${JSON.stringify(ref)}`, { id: ref, hint: 'give a Layer id or label (LAYERSTACK#SEQ), a Commit id, a Branch or a LayerStack name; see `layerfs query layers|commits|branches`' });
}

export function describeState(s: ResolvedState): string {
  return `${s.kind}:${toHex(s.id)}`;
}

/**
 * The state a state's changes are counted from: a Commit's or Branch's base Layer (where its
 * Branch was forked), a Layer's parent. A LayerStack's first Layer has none.
 */
export function forkBase(store: Store, s: ResolvedState): ResolvedState | undefined {
  let layerId: Buffer | null | undefined;
  if (s.kind === 'commit') layerId = resolveCommit(store, toHex(s.id))?.baseLayerId;
  else if (s.kind === 'branch') layerId = getBranch(store, s.id)?.baseLayerId;
  else layerId = getLayer(store, s.id)?.parentLayerId;
  if (!layerId) return undefined;
  return { kind: 'layer', id: layerId, rootId: getLayer(store, layerId)!.rootId };
}
