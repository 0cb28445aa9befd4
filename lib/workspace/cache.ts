/** The stat cache of a materialized Workspace (table workspace_entries). */
import type { Store } from '../store/index.js';

export interface CacheRow {
  serial: number;
  parentSerial: number;
  ino: string;
  sig: string;
}

export function loadCache(store: Store, workspaceId: Buffer): Map<string, CacheRow> {
  const rows = store.db.prepare('SELECT path, serial, parent_serial AS parentSerial, sig FROM workspace_entries WHERE workspace_id = ?').all(workspaceId) as {
    path: Buffer;
    serial: number;
    parentSerial: number;
    sig: string;
  }[];
  const m = new Map<string, CacheRow>();
  for (const r of rows) m.set(r.path.toString('latin1'), { serial: r.serial, parentSerial: r.parentSerial, ino: r.sig.split(':')[1]!, sig: r.sig });
  return m;
}

export interface CacheUpdate {
  path: Buffer;
  row: CacheRow | null;
}

/** Applies cache changes inside the caller's transaction. */
export function writeCache(store: Store, workspaceId: Buffer, updates: Iterable<CacheUpdate>): void {
  const del = store.db.prepare('DELETE FROM workspace_entries WHERE workspace_id = ? AND path = ?');
  const put = store.db.prepare('INSERT OR REPLACE INTO workspace_entries (workspace_id, path, serial, parent_serial, sig) VALUES (?, ?, ?, ?, ?)');
  for (const u of updates) {
    if (u.row === null) del.run(workspaceId, u.path);
    else put.run(workspaceId, u.path, u.row.serial, u.row.parentSerial, u.row.sig);
  }
}
