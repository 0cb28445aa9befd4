/**
 * The remote heads a Store last saw (table `remote_refs`): what a remote had for a LayerStack or
 * Branch at the last fetch or push. They are local history, not connection settings: a user
 * names them as `REMOTE/NAME` like any state, and retention keeps what they reach like a Branch
 * head. lib/remote writes them through `setRemoteRef` after a fetch or push; `remotes` (the URLs)
 * stays lib/remote's own.
 */
import { LayerFsError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { ReadStore } from '../store/store-read.js';
import { ensureHistoryTable, hasHistoryTable } from './tables.js';

export interface RemoteRefRow {
  remote: string;
  kind: 'layerstack' | 'branch';
  name: string;
  layerStackId: Buffer;
  id: Buffer;
  head: Buffer | null;
  baseLayerId: Buffer | null;
  updatedMs: number;
}

const REMOTE_REF_COLUMNS = 'remote, kind, name, layer_stack_id AS layerStackId, id, head, base_layer_id AS baseLayerId, updated_ms AS updatedMs';

export function remoteRefs(store: ReadStore, remote?: string): RemoteRefRow[] {
  if (!hasHistoryTable(store, 'remote_refs')) return [];
  if (remote) return store.db.prepare(`SELECT ${REMOTE_REF_COLUMNS} FROM remote_refs WHERE remote = ? ORDER BY kind, name`).all(remote) as RemoteRefRow[];
  return store.db.prepare(`SELECT ${REMOTE_REF_COLUMNS} FROM remote_refs ORDER BY remote, kind, name`).all() as RemoteRefRow[];
}

/** Records what the remote's head of a ref is now (inside the caller's write transaction). */
export function setRemoteRef(store: Store, r: Omit<RemoteRefRow, 'updatedMs'>): void {
  ensureHistoryTable(store, 'remote_refs');
  store.db
    .prepare(
      `INSERT INTO remote_refs (remote, kind, name, layer_stack_id, id, head, base_layer_id, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (remote, kind, layer_stack_id, name) DO UPDATE SET id = excluded.id, head = excluded.head, base_layer_id = excluded.base_layer_id, updated_ms = excluded.updated_ms`,
    )
    .run(r.remote, r.kind, r.name, r.layerStackId, r.id, r.head, r.baseLayerId, Date.now());
}

/** The head Commits of the remote-tracking Branches: retention keeps their histories like a local Branch's. */
export function remoteBranchHeads(store: ReadStore): Buffer[] {
  if (!hasHistoryTable(store, 'remote_refs')) return [];
  return store.db.prepare("SELECT head FROM remote_refs WHERE kind = 'branch' AND head IS NOT NULL").pluck().all() as Buffer[];
}

export interface RemoteRefTarget {
  kind: 'layerstack' | 'branch';
  /** LayerStack: its head Layer; Branch: its head Commit (null before its first Commit). */
  head: Buffer | null;
  baseLayerId: Buffer | null;
}

/**
 * `REMOTE/NAME`: the head a remote had for a LayerStack or Branch of that name at the last fetch
 * or push (names cannot hold '/', so nothing else is read this way). LayerStacks come first.
 */
export function resolveRemoteRef(store: ReadStore, ref: string, kinds: ('layerstack' | 'branch')[] = ['layerstack', 'branch']): RemoteRefTarget | undefined {
  const m = /^([^/]+)\/([^/]+)$/.exec(ref);
  if (!m || !hasHistoryTable(store, 'remote_refs')) return undefined;
  for (const kind of kinds) {
    const rows = store.db.prepare('SELECT head, base_layer_id AS baseLayerId FROM remote_refs WHERE remote = ? AND kind = ? AND name = ?').all(m[1], kind, m[2]) as { head: Buffer | null; baseLayerId: Buffer | null }[];
    if (rows.length > 1) throw new LayerFsError('ERR_AMBIGUOUS_ID', `several LayerStacks on ${m[1]} have a Branch named ${m[2]}`, { id: ref, hint: 'give the Commit id instead' });
    if (rows[0]) return { kind, ...rows[0] };
  }
  return undefined;
}
