/**
 * Publishing a Workspace's state when the Branch head may have moved: the reconciling commit
 * both projections share. The caller holds the write transaction; reconciliation and the
 * compare-and-swap run inside it, and a Conflicted answer tells the caller to roll back.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { ObjectWriter } from '../store/objects.js';
import type { Store } from '../store/store.js';
import { branchRoot, getBranch, publishCommit, type PublishOutcome } from './branches.js';
import type { CommitNote } from './note.js';
import { reconcileStates, type ReconcileConflict } from './reconcile.js';

/** How a reconciling commit went: which paths combined both sides, how often the head moved again, how long it took. */
export interface Reconciliation {
  merged: string[];
  retries: number;
  ms: number;
  /** The head the result was published on. */
  onto: Buffer | null;
  /** Workspace serial → serial in the published state (inodes both sides created under one number). */
  renumbered: Map<number, number>;
}

export type ReconciledPublish =
  | (Extract<PublishOutcome, { outcome: 'Created' | 'UpToDate' }> & { root: Buffer; reconciliation?: Reconciliation })
  | Extract<PublishOutcome, { outcome: 'HeadMoved' }>
  | { outcome: 'Conflicted'; conflicts: ReconcileConflict[]; head: Buffer | null; ms: number };

/** Heads that move more often than this during one commit mean something is wrong. */
const MAX_RETRIES = 100;

/**
 * Publishes `root` (the Workspace's state, from `baseRoot`) on the Branch. If the head is no
 * longer `expectedHead`, then unless `strict`, reconciles base → head and base → `root` and
 * publishes the result on the current head, by compare-and-swap, retrying while the head moves.
 * The Branch's base Layer must not have changed (Add re-bases nothing, so it never does).
 */
export function publishReconciled(
  store: Store,
  w: ObjectWriter,
  args: { branchId: Buffer; root: Buffer; baseRoot: Buffer; expectedHead: Buffer | null; expectedBase: Buffer; note: CommitNote; strict: boolean; resolved?: () => Set<string> },
): ReconciledPublish {
  const first = publishCommit(store, args.branchId, args.root, args.expectedHead, args.expectedBase, args.note);
  if (first.outcome !== 'HeadMoved') return { ...first, root: args.root };
  if (args.strict) return first;
  const t0 = performance.now();
  // What this transaction wrote so far becomes readable (the three states are read as views).
  w.flush();
  // Read only now: a commit onto an unmoved head never needs them.
  const resolved = args.resolved?.();
  for (let retries = 0; retries <= MAX_RETRIES; retries++) {
    const b = getBranch(store, args.branchId);
    if (!b) throw new LayerFsError('ERR_NOT_FOUND', `the Branch ${toHex(args.branchId)} no longer exists`, { id: toHex(args.branchId) });
    if (!b.baseLayerId.equals(args.expectedBase)) return first;
    const r = reconcileStates(store, w, args.baseRoot, branchRoot(store, b), args.root, resolved ? { resolved } : {});
    if (r.outcome === 'Conflicted') return { outcome: 'Conflicted', conflicts: r.conflicts, head: b.headCommitId, ms: performance.now() - t0 };
    w.flush();
    const p = publishCommit(store, args.branchId, r.root, b.headCommitId, args.expectedBase, args.note);
    if (p.outcome === 'HeadMoved') continue;
    return { ...p, root: r.root, reconciliation: { merged: r.merged, retries, ms: performance.now() - t0, onto: b.headCommitId, renumbered: r.renumbered } };
  }
  throw new LayerFsError('ERR_BUSY', `the head of Branch ${toHex(args.branchId)} kept moving during ${MAX_RETRIES} reconciliations`, { hint: 'retry the commit' });
}
