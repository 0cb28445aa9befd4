/**
 * Where a new Branch forks from, as users give it: a Layer (or LayerStack head, or a checkpoint
 * taken before its Branch's first Commit), a Commit of a Branch (by id, or by a checkpoint, whose
 * Branch is then implied), or any state reference (`from`).
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { getBranch, resolveBranch, resolveCommit, resolveLayer, type ForkSource } from '../history/index.js';
import type { Store } from '../store/store.js';
import { refPrefix, resolveState, type ResolvedState } from './refs.js';

export type ForkFrom = { name: string; layer: string } | { name: string; branch?: string; commit: string } | { name: string; from: string };

/** A resolved state as a fork source: a Commit needs its Branch (given, or the checkpoint's). */
function sourceOf(store: Store, s: ResolvedState, branch: string | undefined, ref: string): ForkSource {
  if (s.kind === 'layer') return { layer: s.id };
  if (s.kind === 'branch') {
    const b = getBranch(store, s.id)!;
    return b.headCommitId ? { branch: b, commit: b.headCommitId } : { layer: b.baseLayerId };
  }
  const owner = branch !== undefined ? resolveBranch(store, branch) : s.checkpoint ? getBranch(store, s.checkpoint.branchId) : undefined;
  if (!owner) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${ref} is a Commit: say which Branch's history it is in`, { id: ref, hint: 'give the Branch too (--branch BRANCH --commit COMMIT), or a checkpoint name' });
  return { branch: owner, commit: s.id };
}

export function forkSource(store: Store, opts: ForkFrom): ForkSource {
  if ('from' in opts) return sourceOf(store, resolveState(store, opts.from), undefined, opts.from);
  if ('layer' in opts) {
    const plain = refPrefix(opts.layer) ? undefined : resolveLayer(store, opts.layer);
    if (plain) return { layer: plain.id };
    const s = resolveState(store, opts.layer);
    if (s.kind !== 'layer') {
      throw new LayerFsError('ERR_INVALID_ARGUMENT', `${opts.layer} is ${s.checkpoint ? `a checkpoint of ${s.kind === 'commit' ? 'Commit' : 'Branch'} ${toHex(s.id)}` : `a ${s.kind}`}, not a Layer`, { id: opts.layer, hint: `fork from it with --commit ${opts.layer}` });
    }
    return { layer: s.id };
  }
  // A Commit id as before; anything else (a checkpoint, `commit:ID`) through the state parser.
  const commit = refPrefix(opts.commit) ? undefined : resolveCommit(store, opts.commit);
  if (commit) {
    if (opts.branch === undefined) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${opts.commit} is a Commit: say which Branch's history it is in`, { id: opts.commit, hint: 'give the Branch too (--branch BRANCH --commit COMMIT), or a checkpoint name' });
    return { branch: resolveBranch(store, opts.branch), commit: commit.id };
  }
  const s = resolveState(store, opts.commit);
  if (s.kind === 'branch') throw new LayerFsError('ERR_INVALID_ARGUMENT', `${opts.commit} is a Branch, not a Commit`, { id: opts.commit, hint: `fork at its head with { from: '${opts.commit}' }` });
  return sourceOf(store, s, opts.branch, opts.commit);
}
