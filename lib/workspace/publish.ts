/**
 * Publishing a Workspace's Commit: the one path both projections take. A materialized Workspace
 * and a FUSE overlay each store their changes their own way, then hand the new root here, inside
 * their write transaction: the Commit goes onto the Branch by compare-and-swap of its head (and
 * base Layer), reconciled with a moved head unless strict, and the Workspace row moves onto what
 * was published in the same transaction. A refusal (HeadMoved, Conflicted) rolls the whole
 * transaction back: nothing of it is stored, and the Workspace keeps every change.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { branchRoot, getBranch, publishReconciled, type CommitNote, type ReconcileConflict } from '../history/index.js';
import type { ObjectWriter, Store } from '../store/index.js';
import { clearConflicts, resolvedPaths, saveConflicts } from './conflicts.js';
import { setWorkspaceBase } from './rows.js';

/** The Branch a Workspace commits to, the head and base Layer it expects, and the state it started from. */
export interface PublishTarget {
  branchId: Buffer;
  expectedHead: Buffer | null;
  expectedBase: Buffer;
  /** The root the Workspace's changes were made on. */
  baseRoot: Buffer;
  /** The Workspace row to keep in step, when there is one. */
  workspaceId: Buffer | null;
}

export type Refusal = { outcome: 'HeadMoved'; expected: Buffer | null; actual: Buffer | null } | { outcome: 'Conflicted'; conflicts: ReconcileConflict[]; head: Buffer | null; ms: number };

/** Thrown inside the write transaction so that a refused publish stores nothing. */
export class RollBack {
  constructor(readonly outcome: Refusal) {}
}

export type Published = Extract<ReturnType<typeof publishReconciled>, { outcome: 'Created' | 'UpToDate' }>;

/**
 * Publishes `root` as the next Commit of the target's Branch, inside the caller's write
 * transaction; throws RollBack when it cannot (the caller turns it into its outcome with
 * `refused`). On success the Workspace row records the published root and the new head, and its
 * conflicts are settled.
 */
export function publishWorkspaceCommit(store: Store, w: ObjectWriter, target: PublishTarget, root: Buffer, run: { note: CommitNote; strict: boolean }): { published: Published; head: Buffer | null } {
  // The paths `workspace resolve` settled take the Workspace's version, in either projection.
  const ws = target.workspaceId;
  const resolved = ws ? () => resolvedPaths(store, ws) : undefined;
  const published = publishReconciled(store, w, {
    branchId: target.branchId,
    root,
    baseRoot: target.baseRoot,
    expectedHead: target.expectedHead,
    expectedBase: target.expectedBase,
    note: run.note,
    strict: run.strict,
    ...(resolved ? { resolved } : {}),
  });
  if (published.outcome === 'HeadMoved' || published.outcome === 'Conflicted') throw new RollBack(published);
  const head = published.outcome === 'Created' ? published.commit.id : published.head;
  if (target.workspaceId) {
    setWorkspaceBase(store, target.workspaceId, published.root, head);
    clearConflicts(store, target.workspaceId);
  }
  return { published, head };
}

/**
 * After the write transaction threw: a RollBack becomes its outcome (a Conflicted one's conflicts
 * are kept for `workspace conflicts` and `resolve`); anything else is rethrown.
 */
export function refused(store: Store, workspaceId: Buffer | null, e: unknown): Refusal {
  if (!(e instanceof RollBack)) throw e;
  if (e.outcome.outcome === 'Conflicted' && workspaceId) saveConflicts(store, workspaceId, e.outcome.head, e.outcome.conflicts);
  return e.outcome;
}

export type Unchanged = { outcome: 'HeadMoved'; expected: Buffer | null; actual: Buffer | null } | { outcome: 'UpToDate'; head: Buffer | null; moveTo?: { head: Buffer | null; root: Buffer } };

function sameHead(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b);
}

/**
 * A commit with nothing to store. A Commit's id covers its base Layer, so the Workspace is up to
 * date only while the Branch has both the head and the base Layer it expects: strict, either
 * having moved is HeadMoved. Otherwise UpToDate; when only the head moved (same base Layer) the
 * Workspace should move onto it (`moveTo`), as after any commit.
 */
export function checkUnchanged(store: Store, target: Pick<PublishTarget, 'branchId' | 'expectedHead' | 'expectedBase'>, strict: boolean): Unchanged {
  const b = getBranch(store, target.branchId);
  if (!b) throw new LayerFsError('ERR_NOT_FOUND', `the Branch ${toHex(target.branchId)} no longer exists`, { id: toHex(target.branchId) });
  const moved = !sameHead(b.headCommitId, target.expectedHead);
  const sameBase = b.baseLayerId.equals(target.expectedBase);
  if (strict && (moved || !sameBase)) return { outcome: 'HeadMoved', expected: target.expectedHead, actual: b.headCommitId };
  if (moved && sameBase) return { outcome: 'UpToDate', head: b.headCommitId, moveTo: { head: b.headCommitId, root: branchRoot(store, b) } };
  return { outcome: 'UpToDate', head: b.headCommitId };
}
