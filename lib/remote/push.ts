/**
 * push: send a LayerStack (its Layers) or a Branch (its Commits, and the Layers up to its base)
 * to a remote. Objects first, in batches the remote keeps even if the push stops halfway; then
 * one PostgreSQL transaction that moves the heads by compare-and-swap (rows locked FOR UPDATE).
 * A head that is no longer what this push started from is ERR_HEAD_MOVED: a push never
 * overwrites. A LayerStack or Branch of that name with another id is ERR_REMOTE_MISMATCH.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { branchLog, getCommit, getLayer, getLayerStack, layerStackByName, listLayers, resolveBranch, type BranchRow, type CommitRow, type LayerRow, type LayerStackRow } from '../history/index.js';
import type { Store } from '../store/index.js';
import type { RemoteConnection } from './connection.js';
import { RemoteObjects } from './pg-objects.js';
import { MAX_PUSH_RECONCILES, reconcileBranch, type PushConflict } from './push-reconcile.js';
import { setRemoteRef } from './remotes.js';
import { remoteName, sealFields } from './row-cipher.js';
import { pushObjects, type TransferOptions, type TransferStats } from './transfer.js';

export interface PushOptions extends TransferOptions {
  /** Answer ERR_HEAD_MOVED when the remote head moved, instead of reconciling with it. */
  strict?: boolean;
}

/** How a stale push was reconciled with the remote Branch before it landed. */
export interface PushReconciliation {
  /** Compare-and-swaps lost (each followed by a fetch and a replay). */
  attempts: number;
  /** Local Commits replayed onto the remote head (in the last replay). */
  replayed: number;
  /** Paths both sides changed, combined (text line by line, or record fields). */
  merged: string[];
  ms: number;
}

export interface PushResult {
  ref: string;
  kind: 'layerstack' | 'branch';
  /** Conflicted: the remote Branch moved and its changes overlap this one's; nothing moved anywhere. */
  outcome: 'Pushed' | 'UpToDate' | 'Conflicted';
  reconciled?: PushReconciliation;
  /** With Conflicted: what overlapped, path by path, and which local Commit it was in. */
  conflicts?: PushConflict[];
  /** The remote head now: a Layer id (LayerStack) or a Commit id (Branch; null before its first Commit). */
  head: string | null;
  layersSent: number;
  commitsSent: number;
  transfer: TransferStats;
  ms: number;
}

function headMoved(what: string, expected: Buffer | null | undefined, actual: Buffer | null | undefined): LayerFsError {
  return new LayerFsError('ERR_HEAD_MOVED', `the remote ${what} moved since this push started (or holds work this Store lacks)`, {
    expected: expected ? toHex(expected) : null,
    actual: actual ? toHex(actual) : null,
    hint: 'push without --strict to reconcile with the remote head, or fetch and continue from REMOTE/NAME; a push never overwrites',
  });
}

interface StackPlan {
  stack: LayerStackRow;
  /** Remote head before (null: the remote has no such LayerStack). */
  remoteHead: Buffer | null;
  /** Layers to insert, oldest first, and the new head ([] = no change). */
  send: LayerRow[];
}

/** The remote's rows a push plans from, read in one query. */
interface RemoteRows {
  stack?: { id: Buffer; head: Buffer };
  /** Whether the remote holds the Layer the push goes up to. */
  hasUpTo: boolean;
  branch?: { id: Buffer; head: Buffer | null };
}

async function readRemoteRows(conn: RemoteConnection, stack: LayerStackRow, upTo: LayerRow, branch: BranchRow | undefined): Promise<RemoteRows> {
  const rows = await conn.query<{ sid: Buffer | null; shead: Buffer | null; up: boolean; bid: Buffer | null; bhead: Buffer | null }>(
    `SELECT s.id AS sid, s.head_layer_id AS shead, EXISTS (SELECT 1 FROM layerfs.layers WHERE id = $2) AS up, b.id AS bid, b.head_commit_id AS bhead
     FROM (SELECT 1) AS one
     LEFT JOIN layerfs.layer_stacks s ON s.name = $1
     LEFT JOIN layerfs.branches b ON b.layer_stack_id = $3 AND b.name = $4::text`,
    [remoteName(conn, 'layerstack', stack.name), upTo.id, stack.id, branch ? remoteName(conn, 'branch', branch.name) : null],
  );
  const r = rows[0]!;
  return { stack: r.sid ? { id: r.sid, head: r.shead! } : undefined, hasUpTo: r.up, branch: r.bid ? { id: r.bid, head: r.bhead } : undefined };
}

/** What moving the remote LayerStack to `upTo` needs: nothing, a fast-forward, or HeadMoved. */
function planStack(store: Store, stack: LayerStackRow, upTo: LayerRow, remote: RemoteRows): StackPlan {
  const chain = listLayers(store, stack.id).filter((l) => l.seq <= upTo.seq);
  const r = remote.stack;
  if (!r) return { stack, remoteHead: null, send: chain };
  if (!r.id.equals(stack.id)) {
    throw new LayerFsError('ERR_REMOTE_MISMATCH', `the remote's LayerStack ${stack.name} is another LayerStack (id ${toHex(r.id)}, here ${toHex(stack.id)})`, { name: stack.name, id: toHex(stack.id), hint: 'rename one of them' });
  }
  if (remote.hasUpTo) return { stack, remoteHead: r.head, send: [] };
  const at = chain.findIndex((l) => l.id.equals(r.head));
  if (at < 0) throw headMoved(`LayerStack ${stack.name}`, chain[chain.length - 1]?.id, r.head);
  return { stack, remoteHead: r.head, send: chain.slice(at + 1) };
}

interface BranchPlan {
  branch: BranchRow;
  exists: boolean;
  remoteHead: Buffer | null;
  send: CommitRow[];
}

function planBranch(store: Store, b: BranchRow, remote: RemoteRows): BranchPlan {
  const log = branchLog(store, b).reverse();
  const r = remote.branch;
  if (!r) return { branch: b, exists: false, remoteHead: null, send: log };
  if (!r.id.equals(b.id)) {
    throw new LayerFsError('ERR_REMOTE_MISMATCH', `the remote's Branch ${b.name} is another Branch (id ${toHex(r.id)}, here ${toHex(b.id)})`, { name: b.name, id: toHex(b.id), hint: 'fork under another name, or fetch and continue the remote Branch' });
  }
  if (r.head === null) return { branch: b, exists: true, remoteHead: null, send: log };
  const at = log.findIndex((c) => c.id.equals(r.head!));
  if (at < 0) throw headMoved(`Branch ${b.name}`, b.headCommitId, r.head);
  return { branch: b, exists: true, remoteHead: r.head, send: log.slice(at + 1) };
}

/**
 * The root of a state the remote holds whole, held here too, closest to what this push sends:
 * the remote Branch head, else the remote LayerStack head (or the Layer this push goes up to,
 * when the remote has it). The negotiation starts from it (findMissingLocally).
 */
function knownRoots(store: Store, sp: StackPlan, upTo: LayerRow, bp: BranchPlan | undefined): Buffer[] {
  const c = bp?.remoteHead ? getCommit(store, bp.remoteHead) : undefined;
  if (c) return [c.rootId];
  if (sp.remoteHead && sp.send.length === 0) return [upTo.rootId];
  const head = sp.remoteHead ? getLayer(store, sp.remoteHead) : undefined;
  return head ? [head.rootId] : [];
}

async function moveStack(conn: RemoteConnection, p: StackPlan): Promise<void> {
  if (p.send.length === 0) return;
  const head = p.send[p.send.length - 1]!;
  if (p.remoteHead === null) {
    const st = p.stack;
    const sealed = sealFields(conn, 'layer_stacks', st.id, { name: st.name, createdMs: st.createdMs });
    const ins = await conn.query('INSERT INTO layerfs.layer_stacks (id, name, head_layer_id, created_ms, sealed) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING 1', [
      st.id,
      remoteName(conn, 'layerstack', st.name),
      head.id,
      sealed ? 0 : st.createdMs,
      sealed,
    ]);
    if (ins.length === 0) throw headMoved(`LayerStack ${p.stack.name}`, null, null);
  } else {
    const cur = await conn.query<{ head: Buffer }>('SELECT head_layer_id AS head FROM layerfs.layer_stacks WHERE id = $1 FOR UPDATE', [p.stack.id]);
    if (!cur[0] || !cur[0].head.equals(p.remoteHead)) throw headMoved(`LayerStack ${p.stack.name}`, p.remoteHead, cur[0]?.head);
  }
  for (const l of p.send) {
    const sealed = sealFields(conn, 'layers', l.id, { createdMs: l.createdMs });
    await conn.query('INSERT INTO layerfs.layers (id, layer_stack_id, seq, parent_layer_id, root_id, source_branch_id, source_commit_id, created_ms, sealed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)', [
      l.id,
      l.layerStackId,
      l.seq,
      l.parentLayerId,
      l.rootId,
      l.sourceBranchId,
      l.sourceCommitId,
      sealed ? 0 : l.createdMs,
      sealed,
    ]);
  }
  if (p.remoteHead !== null) await conn.query('UPDATE layerfs.layer_stacks SET head_layer_id = $1 WHERE id = $2', [head.id, p.stack.id]);
}

async function moveBranch(conn: RemoteConnection, p: BranchPlan): Promise<void> {
  const b = p.branch;
  for (const c of p.send) {
    const sealed = sealFields(conn, 'commits', c.id, { message: c.message, author: c.author, metadata: c.metadata, createdMs: c.createdMs });
    const clear = sealed ? [0, '', null, ''] : [c.createdMs, c.message, c.metadata, c.author];
    await conn.query(
      'INSERT INTO layerfs.commits (id, root_id, parent_commit_id, base_layer_id, created_ms, message, metadata, author, id_version, sealed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING',
      [c.id, c.rootId, c.parentCommitId, c.baseLayerId, ...clear, c.idVersion, sealed],
    );
  }
  if (!p.exists) {
    const sealed = sealFields(conn, 'branches', b.id, { name: b.name, createdMs: b.createdMs });
    const ins = await conn.query('INSERT INTO layerfs.branches (id, layer_stack_id, name, base_layer_id, head_commit_id, created_ms, sealed) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING 1', [
      b.id,
      b.layerStackId,
      remoteName(conn, 'branch', b.name),
      b.baseLayerId,
      b.headCommitId,
      sealed ? 0 : b.createdMs,
      sealed,
    ]);
    if (ins.length === 0) throw headMoved(`Branch ${b.name}`, null, null);
    return;
  }
  // Compare-and-swap in one statement: the UPDATE locks the row and re-checks the head on the
  // version it locked (a concurrent move makes it match nothing).
  const moved = await conn.query('UPDATE layerfs.branches SET head_commit_id = $1, base_layer_id = $2 WHERE id = $3 AND head_commit_id IS NOT DISTINCT FROM $4 RETURNING 1', [b.headCommitId, b.baseLayerId, b.id, p.remoteHead]);
  if (moved.length === 0) {
    const cur = await conn.query<{ head: Buffer | null }>('SELECT head_commit_id AS head FROM layerfs.branches WHERE id = $1', [b.id]);
    throw headMoved(`Branch ${b.name}`, p.remoteHead, cur[0]?.head);
  }
}

/** What REF names here: a LayerStack name, or a Branch (name or id). */
function resolvePushRef(store: Store, ref: string): { stack: LayerStackRow; branch?: BranchRow } {
  const stack = layerStackByName(store, ref)?.id;
  let branch: BranchRow | undefined;
  try {
    branch = resolveBranch(store, ref);
  } catch (e) {
    if (!(e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND')) throw e;
    if (stack === undefined) throw new LayerFsError('ERR_NOT_FOUND', `no LayerStack or Branch named ${JSON.stringify(ref)}`, { name: ref, hint: 'see `layerfs query layerstacks` and `layerfs query branches`' });
  }
  if (stack && branch) throw new LayerFsError('ERR_AMBIGUOUS_ID', `${ref} names both a LayerStack and a Branch`, { name: ref, hint: 'give the Branch id to push the Branch' });
  if (branch) return { stack: getLayerStack(store, branch.layerStackId)!, branch };
  return { stack: getLayerStack(store, stack!)! };
}

/**
 * Pushes REF. A Branch push that loses the remote's compare-and-swap reconciles (unless
 * `strict`): fetch, replay the local Commits onto the remote head, push again, at most
 * MAX_PUSH_RECONCILES times.
 */
export async function pushRef(store: Store, conn: RemoteConnection, ref: string, opts: PushOptions = {}): Promise<PushResult> {
  const t0 = performance.now();
  let reconciled: PushReconciliation | undefined;
  for (let attempt = 0; ; attempt++) {
    let lost: LayerFsError;
    try {
      const r = await pushOnce(store, conn, ref, opts);
      return reconciled ? { ...r, reconciled: { ...reconciled, ms: Math.round(performance.now() - t0) }, ms: Math.round(performance.now() - t0) } : r;
    } catch (e) {
      if (!(e instanceof LayerFsError) || e.code !== 'ERR_HEAD_MOVED' || opts.strict || attempt >= MAX_PUSH_RECONCILES) throw e;
      lost = e;
    }
    const { stack, branch } = store.read(() => resolvePushRef(store, ref));
    if (!branch) throw lost;
    const r = await reconcileBranch(store, conn, stack.name, branch.id, lost, opts);
    // Nothing changed here (the remote LayerStack went another way): another try would lose again.
    const after = store.read(() => resolvePushRef(store, ref));
    if (r.outcome === 'Replayed' && sameId(after.branch!.headCommitId, branch.headCommitId) && after.stack.headLayerId.equals(stack.headLayerId)) throw lost;
    if (r.outcome === 'Conflicted') {
      return { ref, kind: 'branch', outcome: 'Conflicted', head: r.remoteHead, conflicts: r.conflicts, layersSent: 0, commitsSent: 0, transfer: emptyStats(), ms: Math.round(performance.now() - t0) };
    }
    reconciled = { attempts: attempt + 1, replayed: r.replayed, merged: [...new Set([...(reconciled?.merged ?? []), ...r.merged])], ms: 0 };
  }
}

function emptyStats(): TransferStats {
  return { objects: 0, bytes: 0, whole: 0, asked: 0, queries: 0, batches: 0 };
}

async function pushOnce(store: Store, conn: RemoteConnection, ref: string, opts: TransferOptions): Promise<PushResult> {
  const t0 = performance.now();
  const { stack, branch } = store.read(() => resolvePushRef(store, ref));
  const upTo = store.read(() => listLayers(store, stack.id).find((l) => l.id.equals(branch ? branch.baseLayerId : stack.headLayerId))!);
  const remote = await readRemoteRows(conn, stack, upTo, branch);
  const { sp, bp, known } = store.read(() => {
    const sp = planStack(store, stack, upTo, remote);
    const bp = branch ? planBranch(store, branch, remote) : undefined;
    return { sp, bp, known: knownRoots(store, sp, upTo, bp) };
  });
  const roots = [...sp.send.map((l) => l.rootId), ...(bp?.send.map((c) => c.rootId) ?? [])];
  const branchChanges = bp !== undefined && (!bp.exists || bp.send.length > 0 || !sameId(bp.remoteHead, bp.branch.headCommitId));
  // The heads move in the transaction of the last batch of objects (one commit for both).
  const finish =
    sp.send.length > 0 || branchChanges
      ? async () => {
          await moveStack(conn, sp);
          if (bp && branchChanges) await moveBranch(conn, bp);
        }
      : undefined;
  const transfer = await pushObjects(store, new RemoteObjects(conn), roots, { ...opts, known, finish });
  const stackHead = sp.send.length ? sp.send[sp.send.length - 1]!.id : sp.remoteHead!;
  store.writeSync(() => {
    if (!branch || sp.send.length) setRemoteRef(store, { remote: conn.name, kind: 'layerstack', name: stack.name, layerStackId: stack.id, id: stack.id, head: stackHead, baseLayerId: null });
    if (branch) setRemoteRef(store, { remote: conn.name, kind: 'branch', name: branch.name, layerStackId: stack.id, id: branch.id, head: branch.headCommitId, baseLayerId: branch.baseLayerId });
  });
  const head = branch ? branch.headCommitId : stackHead;
  return {
    ref,
    kind: branch ? 'branch' : 'layerstack',
    outcome: sp.send.length > 0 || branchChanges ? 'Pushed' : 'UpToDate',
    head: head ? toHex(head) : null,
    layersSent: sp.send.length,
    commitsSent: bp?.send.length ?? 0,
    transfer,
    ms: Math.round(performance.now() - t0),
  };
}

function sameId(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b);
}
