/**
 * The SDK's transfers with a remote: thin wrappers over lib/remote that open one connection per
 * operation and close it. Loaded on first use (the Client imports it when a transfer starts), so
 * only processes that talk to a remote load the PostgreSQL driver.
 */
import {
  addRemote,
  checkRemoteSchema,
  fetchRemote,
  getRemote,
  initRemoteSchema,
  pushRef,
  RemoteConnection,
  withoutPassword,
  loadRemoteKey,
  useRemoteKey,
  type FetchResult,
  type PushResult,
  verifyRemote,
  type RemoteVerifyReport,
} from '../remote/index.js';
import { Store } from '../store/store.js';
import { maintenanceClaim } from '../workspace/owner.js';
import type { RemoteOptions } from './remotes.js';

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

export function remoteInit(store: Store, name: string | undefined, opts: RemoteOptions = {}): Promise<{ remote: string; from: number | null; to: number }> {
  return withRemote(store, name, async (c, key) => ({ remote: c.name, ...(await initRemoteSchema(c, key)) }), { ...opts, init: true });
}

/** A push may fetch and reconcile first: it stores objects before it publishes them, as a fetch does. */
export function push(store: Store, remote: string | undefined, ref: string, opts: RemoteOptions = {}): Promise<PushResult> {
  return store.sharingMaintenance('push', maintenanceClaim(), () => withRemote(store, remote, (c) => pushRef(store, c, ref, opts), opts));
}

/** Holds gc and repack off while it stores objects it publishes only at its end (maintenance-lease.ts). */
export function fetch(store: Store, remote: string | undefined, opts: RemoteOptions & { layerStack?: string } = {}): Promise<FetchResult> {
  return store.sharingMaintenance('fetch', maintenanceClaim(), () => withRemote(store, remote, (c) => fetchRemote(store, c, opts), opts));
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
