/**
 * The reconciling push. When the remote Branch moved since this Store last saw it, the push
 * fetches the remote's LayerStack (objects re-hashed, as any fetch), then replays the local
 * Commits the remote lacks onto the remote head, one by one, the way a stale Workspace commit
 * is reconciled (three-way, from page-tree diffs: lib/history/reconcile.ts). Each replayed
 * Commit keeps its message, author, metadata and time; the local Branch then points at the
 * last one (compare-and-swap on its old head), and the push tries the remote's
 * compare-and-swap again. Overlapping changes are never merged silently: the answer is the
 * list of conflicts and neither the local Branch nor the remote moves.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { branchLog, commitIdV2, getBranch, getCommit, getLayer, insertReplayedCommit, reconcileStates, swapBranchHead, type BranchRow, type CommitRow, type ReconcileConflict } from '../history/index.js';
import type { ObjectWriter, Store } from '../store/index.js';
import type { RemoteConnection } from './connection.js';
import { fetchRemote } from './fetch.js';
import { remoteRefs } from './remotes.js';
import type { TransferOptions } from './transfer.js';

/** Pushes that keep losing the race after this many reconciliations give up (ERR_HEAD_MOVED). */
export const MAX_PUSH_RECONCILES = 32;

export interface PushConflict extends ReconcileConflict {
  /** The local Commit whose changes overlapped the remote's. */
  commit: string;
}

export type Replay =
  /** The local Branch now holds the remote head and, on top, its own Commits replayed. */
  | { outcome: 'Replayed'; replayed: number; merged: string[] }
  | { outcome: 'Conflicted'; conflicts: PushConflict[]; remoteHead: string | null };

/** The remote's head of this Branch as the fetch just recorded it. */
function remoteHeadOf(store: Store, remote: string, b: BranchRow): { head: Buffer | null; base: Buffer | null } | undefined {
  const r = remoteRefs(store, remote).find((x) => x.kind === 'branch' && x.id.equals(b.id));
  return r && { head: r.head, base: r.baseLayerId };
}

/** Commit ids from `head` down its parents. */
function ancestry(store: Store, head: Buffer | null): Set<string> {
  const out = new Set<string>();
  for (let id = head; id; ) {
    out.add(id.toString('latin1'));
    id = getCommit(store, id)?.parentCommitId ?? null;
  }
  return out;
}

function rootOf(store: Store, commit: Buffer | null, baseLayer: Buffer): Buffer {
  return commit ? getCommit(store, commit)!.rootId : getLayer(store, baseLayer)!.rootId;
}

/** Replays `local` (oldest first) onto `onto`; a conflict stops at the first Commit that has one. */
function replay(store: Store, w: ObjectWriter, b: BranchRow, onto: Buffer | null, local: CommitRow[]): { tip: Buffer | null; merged: string[]; replayed: number } | { conflicts: PushConflict[] } {
  let tip = onto;
  const merged: string[] = [];
  let replayed = 0;
  for (const c of local) {
    w.flush();
    const r = reconcileStates(store, w, rootOf(store, c.parentCommitId, b.baseLayerId), rootOf(store, tip, b.baseLayerId), c.rootId);
    if (r.outcome === 'Conflicted') return { conflicts: r.conflicts.map((x) => ({ ...x, commit: toHex(c.id) })) };
    merged.push(...r.merged);
    // A change the remote already holds adds nothing: no empty Commit.
    if (r.root.equals(rootOf(store, tip, b.baseLayerId))) continue;
    const id = commitIdV2(r.root, tip, b.baseLayerId, c.createdMs, c.author, c.message, c.metadata ?? '');
    insertReplayedCommit(store, { id, rootId: r.root, parentCommitId: tip, baseLayerId: b.baseLayerId, createdMs: c.createdMs, message: c.message, metadata: c.metadata, author: c.author });
    tip = id;
    replayed++;
  }
  return { tip, merged, replayed };
}

/**
 * Fetches the remote's LayerStack `stackName` and replays the local Branch onto the remote
 * Branch's head. `moved` is the compare-and-swap failure that brought us here: it is thrown as
 * is when reconciling cannot help (the remote Branch was re-based, or the local one moved).
 */
export async function reconcileBranch(store: Store, conn: RemoteConnection, stackName: string, branchId: Buffer, moved: LayerFsError, opts: TransferOptions): Promise<Replay> {
  await fetchRemote(store, conn, { ...opts, layerStack: stackName });
  const seen = store.read(() => {
    const b = getBranch(store, branchId);
    return b && { b, remote: remoteHeadOf(store, conn.name, b) };
  });
  if (!seen?.remote) throw moved;
  const { b, remote } = seen;
  if (!remote.base || !remote.base.equals(b.baseLayerId)) throw moved;
  return store.write((w) => {
    const now = getBranch(store, branchId);
    if (!now || !sameId(now.headCommitId, b.headCommitId)) throw moved;
    const theirs = ancestry(store, remote.head);
    const log = branchLog(store, b);
    const shared = log.findIndex((c) => theirs.has(c.id.toString('latin1')));
    const mine = shared < 0 ? log : log.slice(0, shared);
    const r = replay(store, w, b, remote.head, mine.reverse());
    if ('conflicts' in r) return { outcome: 'Conflicted', conflicts: r.conflicts, remoteHead: remote.head ? toHex(remote.head) : null };
    swapBranchHead(store, b.id, b.headCommitId, r.tip);
    return { outcome: 'Replayed', replayed: r.replayed, merged: r.merged };
  });
}

function sameId(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b);
}

