/**
 * fetch: the remote's LayerStacks, Layers, Branches and Commits (read in one snapshot), the
 * objects they reach, then one local write transaction that makes them reachable. Everything
 * received is checked first: every object is re-hashed as it is stored (transfer.ts), and
 * Layer and Commit ids are re-derived from their rows. Local LayerStacks fast-forward to the
 * remote's (Layers are shared history); local Branches are created when new, never moved; the
 * remote heads are recorded as REMOTE/NAME.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import {
  branchNameTaken,
  expectedCommitId,
  fastForwardLayerStack,
  getBranch,
  getLayerStack,
  insertReceivedBranch,
  insertReceivedCommits,
  insertReceivedLayers,
  insertReceivedLayerStack,
  knownHistory,
  layerId,
  layerStackByName,
  listLayers,
  type BranchRow, type CommitRow, type LayerRow, type LayerStackRow } from '../history/index.js';
import type { Store } from '../store/index.js';
import type { RemoteConnection } from './connection.js';
import { RemoteObjects } from './pg-objects.js';
import { setRemoteRef } from './remotes.js';
import { remoteName, unsealSnapshot } from './row-cipher.js';
import { fetchAllObjects } from './fetch-all.js';
import { fetchObjects, type TransferOptions, type TransferStats } from './transfer.js';

/**
 * What a fetch did with one remote ref here. Tracked: a local Branch of that id differs from the
 * remote's; only the remote head (REMOTE/NAME) was recorded, the local Branch left as it is.
 */
export type RefOutcome = 'New' | 'FastForward' | 'UpToDate' | 'Tracked' | 'LocalAhead' | 'Diverged' | 'NameTaken';

export interface FetchedRef {
  kind: 'layerstack' | 'branch';
  name: string;
  layerStack: string;
  head: string | null;
  outcome: RefOutcome;
}

export interface FetchResult {
  remote: string;
  refs: FetchedRef[];
  layers: number;
  commits: number;
  transfer: TransferStats;
  ms: number;
}

export interface Snapshot {
  stacks: LayerStackRow[];
  layers: LayerRow[];
  branches: BranchRow[];
  commits: CommitRow[];
}

const STACK_COLS = 'id, name, head_layer_id AS "headLayerId", created_ms::float8 AS "createdMs"';
const LAYER_COLS =
  'id, layer_stack_id AS "layerStackId", seq, parent_layer_id AS "parentLayerId", root_id AS "rootId", source_branch_id AS "sourceBranchId", source_commit_id AS "sourceCommitId", created_ms::float8 AS "createdMs"';
const BRANCH_COLS = 'id, layer_stack_id AS "layerStackId", name, base_layer_id AS "baseLayerId", head_commit_id AS "headCommitId", created_ms::float8 AS "createdMs"';
const COMMIT_COLS =
  'id, root_id AS "rootId", parent_commit_id AS "parentCommitId", base_layer_id AS "baseLayerId", created_ms::float8 AS "createdMs", message, metadata, author, id_version AS "idVersion"';

/**
 * The remote's history rows (all, or one LayerStack's), read in one snapshot; on an encrypted
 * remote their sealed fields are opened (row-cipher.ts).
 */
export async function snapshot(conn: RemoteConnection, only?: string): Promise<Snapshot> {
  const s = await conn.transaction(async () => {
    const stacks = await conn.query<LayerStackRow>(`SELECT ${STACK_COLS}, sealed FROM layerfs.layer_stacks ${only ? 'WHERE name = $1' : ''} ORDER BY created_ms, name`, only ? [remoteName(conn, 'layerstack', only)] : []);
    if (only && stacks.length === 0) throw new LayerFsError('ERR_NOT_FOUND', `the remote ${conn.name} has no LayerStack ${only}`, { name: only });
    const ids = stacks.map((s) => s.id);
    const layers = await conn.query<LayerRow>(`SELECT ${LAYER_COLS}, sealed FROM layerfs.layers WHERE layer_stack_id = ANY($1::bytea[]) ORDER BY layer_stack_id, seq`, [ids]);
    const branches = await conn.query<BranchRow>(`SELECT ${BRANCH_COLS}, sealed FROM layerfs.branches WHERE layer_stack_id = ANY($1::bytea[]) ORDER BY created_ms, name`, [ids]);
    const commits = await conn.query<CommitRow>(
      `SELECT ${COMMIT_COLS}, sealed FROM layerfs.commits WHERE base_layer_id IN (SELECT id FROM layerfs.layers WHERE layer_stack_id = ANY($1::bytea[])) ORDER BY created_ms, id`,
      [ids],
    );
    return { stacks, layers, branches, commits };
  }, 'REPEATABLE READ READ ONLY');
  unsealSnapshot(conn, s);
  return s;
}

/** History rows are untrusted too: Layer and Commit ids must follow from their contents. */
export function checkIds(s: Snapshot, remote: string): void {
  const bad = (what: string, id: Buffer) => new LayerFsError('ERR_CORRUPT', `the remote ${remote} sent ${what} ${toHex(id)} whose id does not match its contents`, { id: toHex(id), hint: 'the remote holds damaged or forged history; nothing of it was kept' });
  for (const l of s.layers) if (!layerId(l.layerStackId, l.parentLayerId, l.rootId).equals(l.id)) throw bad('Layer', l.id);
  for (const c of s.commits) if (!expectedCommitId(c).equals(c.id)) throw bad('Commit', c.id);
}

/** Parents before children, so the local foreign keys hold as rows go in. */
function commitsInOrder(commits: CommitRow[]): CommitRow[] {
  const byId = new Map(commits.map((c) => [c.id.toString('latin1'), c]));
  const done = new Set<string>();
  const out: CommitRow[] = [];
  const visit = (c: CommitRow) => {
    const stack: CommitRow[] = [];
    let cur: CommitRow | undefined = c;
    while (cur && !done.has(cur.id.toString('latin1'))) {
      done.add(cur.id.toString('latin1'));
      stack.push(cur);
      cur = cur.parentCommitId ? byId.get(cur.parentCommitId.toString('latin1')) : undefined;
    }
    out.push(...stack.reverse());
  };
  commits.forEach(visit);
  return out;
}

/** Applies the snapshot to the Store in one write transaction; objects are all stored already. */
function applySnapshot(store: Store, remote: string, s: Snapshot): { refs: FetchedRef[]; layers: number; commits: number } {
  return store.writeSync(() => {
    const refs: FetchedRef[] = [];
    let nLayers = 0;
    const accepted = new Set<string>();
    for (const st of s.stacks) {
      const chain = s.layers.filter((l) => l.layerStackId.equals(st.id));
      const here = getLayerStack(store, st.id);
      let outcome: RefOutcome;
      if (!here) {
        if (layerStackByName(store, st.name)) outcome = 'NameTaken';
        else {
          insertReceivedLayerStack(store, st);
          outcome = 'New';
        }
      } else {
        const local = listLayers(store, st.id);
        const localHead = local.find((l) => l.id.equals(here.headLayerId))!;
        const remoteAt = chain.findIndex((l) => l.id.equals(here.headLayerId));
        if (here.headLayerId.equals(st.headLayerId)) outcome = 'UpToDate';
        else if (remoteAt >= 0) outcome = 'FastForward';
        else if (local.some((l) => l.id.equals(st.headLayerId)) && localHead) outcome = 'LocalAhead';
        else outcome = 'Diverged';
      }
      if (outcome === 'NameTaken' || outcome === 'Diverged') {
        refs.push({ kind: 'layerstack', name: st.name, layerStack: st.name, head: toHex(st.headLayerId), outcome });
        continue;
      }
      accepted.add(st.id.toString('latin1'));
      nLayers += insertReceivedLayers(store, chain);
      if (outcome === 'FastForward') fastForwardLayerStack(store, st.id, st.headLayerId);
      setRemoteRef(store, { remote, kind: 'layerstack', name: st.name, layerStackId: st.id, id: st.id, head: st.headLayerId, baseLayerId: null });
      refs.push({ kind: 'layerstack', name: st.name, layerStack: st.name, head: toHex(st.headLayerId), outcome });
    }
    const nCommits = insertReceivedCommits(store, commitsInOrder(s.commits));
    for (const b of s.branches) {
      const stackName = s.stacks.find((x) => x.id.equals(b.layerStackId))!.name;
      if (!accepted.has(b.layerStackId.toString('latin1'))) continue;
      const local = getBranch(store, b.id);
      let outcome: RefOutcome;
      if (local) outcome = sameId(local.headCommitId, b.headCommitId) ? 'UpToDate' : 'Tracked';
      else if (branchNameTaken(store, b.layerStackId, b.name)) outcome = 'NameTaken';
      else {
        insertReceivedBranch(store, b);
        outcome = 'New';
      }
      setRemoteRef(store, { remote, kind: 'branch', name: b.name, layerStackId: b.layerStackId, id: b.id, head: b.headCommitId, baseLayerId: b.baseLayerId });
      refs.push({ kind: 'branch', name: b.name, layerStack: stackName, head: b.headCommitId ? toHex(b.headCommitId) : null, outcome });
    }
    return { refs, layers: nLayers, commits: nCommits };
  });
}

function sameId(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b);
}

export async function fetchRemote(store: Store, conn: RemoteConnection, opts: TransferOptions & { layerStack?: string } = {}): Promise<FetchResult> {
  const t0 = performance.now();
  const s = await snapshot(conn, opts.layerStack);
  checkIds(s, conn.name);
  const known = knownHistory(store);
  const roots = [...s.layers.filter((l) => !known.layer(l.id)).map((l) => l.rootId), ...s.commits.filter((c) => !known.commit(c.id)).map((c) => c.rootId)];
  // A Store that holds nothing lacks everything: a whole-remote fetch into it (a clone) skips
  // the negotiation and streams the remote's packs (fetch-all.ts).
  const everything = !opts.layerStack && !store.hasObjects();
  const remote = new RemoteObjects(conn, store, !everything);
  const transfer = everything ? await fetchAllObjects(store, remote, conn.name, roots, opts) : await fetchObjects(store, remote, roots, opts);
  // The history rows are a small commit right after large ones: left to itself it would
  // checkpoint the whole WAL inline (with an fsync); the Store's background checkpointer, or
  // closing the Store, does it instead.
  const pages = store.db.pragma('wal_autocheckpoint', { simple: true }) as number;
  store.db.pragma('wal_autocheckpoint = 0');
  let applied: ReturnType<typeof applySnapshot>;
  try {
    applied = applySnapshot(store, conn.name, s);
  } finally {
    store.db.pragma(`wal_autocheckpoint = ${pages}`);
  }
  return { remote: conn.name, ...applied, transfer, ms: Math.round(performance.now() - t0) };
}
