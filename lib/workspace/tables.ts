/**
 * lib/workspace's tables that a Store makes on first use (format 11, lib/store/schema.ts
 * LAZY_TABLES): a missing one reads as empty, and a writer makes it before its first row.
 */
import { prepared, type Store } from '../store/index.js';

export type WorkspaceTable = 'sandboxes' | 'workspace_sandboxes' | 'workspace_conflicts';

/** Whether `name` exists in this Store (remembered per Store handle once seen). */
export function hasWorkspaceTable(store: Store, name: WorkspaceTable): boolean {
  return store.hasTable(name);
}

/** Makes `name` if missing, in the running write transaction, before a row is written to it. */
export function ensureWorkspaceTable(store: Store, name: WorkspaceTable): void {
  store.createTable(name);
}

/** The rows `sql` reads from `table`, or none while the Store has not made that table. */
export function workspaceRows<T>(store: Store, table: WorkspaceTable, sql: string, ...params: unknown[]): T[] {
  return hasWorkspaceTable(store, table) ? (prepared(store.db, sql).all(...params) as T[]) : [];
}
