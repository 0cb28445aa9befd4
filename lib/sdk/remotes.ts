/**
 * The SDK's remotes, the part that needs no connection: the remotes recorded in the Store and
 * the remote heads last seen, as plain JSON-able values. Push, fetch, clone, init and verify
 * (remote-transfer.ts) load the PostgreSQL driver when first used.
 */
import { toHex } from '../format/hex.js';
import { addRemote, displayUrl, listRemotes, removeRemote, remoteRefs } from '../remote/local.js';
import type { KeyOptions, PushOptions } from '../remote/index.js';
import type { Store } from '../store/store.js';

export type { FetchResult, PushResult, FetchedRef, TransferStats, RemoteVerifyReport, PushReconciliation, PushConflict } from '../remote/index.js';

export interface RemoteInfo {
  name: string;
  /** The URL as stored (never with a password); "env:" means the PG* environment variables. */
  url: string;
  createdAt: string;
}

export interface RemoteRefInfo {
  remote: string;
  kind: 'layerstack' | 'branch';
  /** How to name it: REMOTE/NAME. */
  ref: string;
  layerStackId: string;
  id: string;
  head: string | null;
  updatedAt: string;
}

/**
 * `key` / `keyFile`: the key of an encrypted remote (docs/REMOTES.md), else the file named by
 * LAYERFS_REMOTE_KEY_FILE_<REMOTE> or LAYERFS_REMOTE_KEY_FILE; with `remoteInit`, a key makes a
 * new remote encrypted.
 */
export interface RemoteOptions extends PushOptions, KeyOptions {
  /** Password for this connection only (never stored); otherwise PGPASSWORD or ~/.pgpass. */
  password?: string;
}

export function remoteAdd(store: Store, name: string, url: string): RemoteInfo {
  const r = addRemote(store, name, url);
  return { name: r.name, url: r.url, createdAt: new Date(r.createdMs).toISOString() };
}

export function remoteList(store: Store): RemoteInfo[] {
  return listRemotes(store).map((r) => ({ name: r.name, url: displayUrl(r.url), createdAt: new Date(r.createdMs).toISOString() }));
}

export function remoteRemove(store: Store, name: string): void {
  removeRemote(store, name);
}

export function remoteRefList(store: Store, remote?: string): RemoteRefInfo[] {
  return remoteRefs(store, remote).map((r) => ({
    remote: r.remote,
    kind: r.kind,
    ref: `${r.remote}/${r.name}`,
    layerStackId: toHex(r.layerStackId),
    id: toHex(r.id),
    head: r.head ? toHex(r.head) : null,
    updatedAt: new Date(r.updatedMs).toISOString(),
  }));
}
