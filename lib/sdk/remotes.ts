/**
 * The SDK's remotes: thin wrappers over lib/remote that open one connection per operation and
 * close it, and turn rows into plain JSON-able values.
 */
import { toHex } from '../format/hex.js';
import {
  addRemote,
  checkRemoteSchema,
  displayUrl,
  fetchRemote,
  getRemote,
  initRemoteSchema,
  listRemotes,
  pushRef,
  RemoteConnection,
  remoteRefs,
  removeRemote,
  withoutPassword,
  loadRemoteKey,
  useRemoteKey,
  type KeyOptions,
  type FetchResult,
  type PushResult,
  type PushOptions,
  verifyRemote,
  type RemoteVerifyReport,
} from '../remote/index.js';
import { Store } from '../store/index.js';

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

async function withRemote<T>(store: Store, name: string | undefined, fn: (c: RemoteConnection, key: Buffer | undefined) => Promise<T>, opts: RemoteOptions & { init?: boolean } = {}): Promise<T> {
  const r = getRemote(store, name);
  const key = loadRemoteKey(r.name, opts);
  const conn = await RemoteConnection.open(r.name, r.url, opts.password);
  try {
    if (!opts.init) {
      const meta = await checkRemoteSchema(conn);
      await useRemoteKey(conn, key, meta);
    }
    return await fn(conn, key);
  } finally {
    await conn.close();
  }
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

export function remoteInit(store: Store, name: string | undefined, opts: RemoteOptions = {}): Promise<{ remote: string; from: number | null; to: number }> {
  return withRemote(store, name, async (c, key) => ({ remote: c.name, ...(await initRemoteSchema(c, key)) }), { ...opts, init: true });
}

export function push(store: Store, remote: string | undefined, ref: string, opts: RemoteOptions = {}): Promise<PushResult> {
  return withRemote(store, remote, (c) => pushRef(store, c, ref, opts), opts);
}

export function fetch(store: Store, remote: string | undefined, opts: RemoteOptions & { layerStack?: string } = {}): Promise<FetchResult> {
  return withRemote(store, remote, (c) => fetchRemote(store, c, opts), opts);
}

/**
 * A new Store at `path` holding what the remote at `url` has (or one LayerStack of it), with
 * the remote recorded as `remote` (default origin; the URL's password, if any, is used for
 * this connection and not stored). On failure the new Store is left with whatever whole batches
 * landed and no history: a later `fetch` there resumes.
 */
export async function clone(url: string, path: string, opts: RemoteOptions & { layerStack?: string; remote?: string } = {}): Promise<{ store: Store; result: FetchResult }> {
  const { url: clean, password } = withoutPassword(url);
  const store = Store.create(path);
  try {
    addRemote(store, opts.remote ?? 'origin', clean);
    const result = await fetch(store, opts.remote ?? 'origin', { ...opts, password: opts.password ?? password });
    return { store, result };
  } catch (e) {
    store.close();
    throw e;
  }
}

export function remoteVerify(store: Store, remote: string | undefined, opts: RemoteOptions = {}): Promise<RemoteVerifyReport> {
  return withRemote(store, remote, (c) => verifyRemote(c), opts);
}
