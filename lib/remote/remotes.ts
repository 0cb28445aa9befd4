/**
 * The remotes a Store knows (table `remotes`). Only the URL is stored, never a password. The
 * remote heads it last saw (`remote_refs`, read as `REMOTE/NAME`) are history's
 * (lib/history/remote-refs.ts), re-exported here for the remote tier's callers. A Store makes
 * `remotes` when its first remote is added (format 11, lib/store/schema.ts LAZY_TABLES); until
 * then it has none.
 */
import { LayerFsError } from '../errors.js';
import { checkName } from '../format/names.js';
import type { Store } from '../store/index.js';
export { remoteRefs, setRemoteRef, type RemoteRefRow } from '../history/index.js';
import { displayUrl, withoutPassword } from './url.js';

export interface RemoteRow {
  name: string;
  url: string;
  createdMs: number;
}

export function listRemotes(store: Store): RemoteRow[] {
  if (!store.hasTable('remotes')) return [];
  return store.db.prepare('SELECT name, url, created_ms AS createdMs FROM remotes ORDER BY name').all() as RemoteRow[];
}

export function getRemote(store: Store, name?: string): RemoteRow {
  const rows = listRemotes(store);
  if (name === undefined) {
    if (rows.length === 1) return rows[0]!;
    const origin = rows.find((r) => r.name === 'origin');
    if (origin) return origin;
    throw new LayerFsError('ERR_NOT_FOUND', rows.length === 0 ? 'this Store has no remote' : 'several remotes and none is named origin', { hint: rows.length === 0 ? 'add one with `layerfs remote add NAME URL`' : 'name the remote' });
  }
  const r = rows.find((x) => x.name === name);
  if (!r) throw new LayerFsError('ERR_NOT_FOUND', `no remote named ${name}`, { name, hint: 'see `layerfs remote ls`' });
  return r;
}

/** Records a remote; a password in the URL is refused (it would be stored in clear text). */
export function addRemote(store: Store, name: string, url: string): RemoteRow {
  checkName(name, 'remote');
  const clean = withoutPassword(url);
  if (clean.password !== undefined) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', 'a password in the remote URL would be stored in clear text', { name, url: displayUrl(url), hint: 'leave it out of the URL and put it in ~/.pgpass or PGPASSWORD' });
  }
  return store.writeSync(() => {
    store.createTable('remotes');
    if (store.db.prepare('SELECT 1 FROM remotes WHERE name = ?').get(name)) throw new LayerFsError('ERR_NAME_TAKEN', `a remote named ${name} already exists`, { name, hint: 'remove it first, or choose another name' });
    store.db.prepare('INSERT INTO remotes (name, url, created_ms) VALUES (?, ?, ?)').run(name, clean.url, Date.now());
    return getRemote(store, name);
  });
}

export function removeRemote(store: Store, name: string): void {
  store.writeSync(() => {
    getRemote(store, name);
    store.db.prepare('DELETE FROM remotes WHERE name = ?').run(name);
  });
}
