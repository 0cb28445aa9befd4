/**
 * lib/history's tables that a Store makes on first use (format 11, lib/store/schema.ts
 * LAZY_TABLES): a missing one reads as empty, and a writer makes it before its first row.
 */
import type { Store } from '../store/store.js';
import type { ReadStore } from '../store/store-read.js';

export type HistoryTable = 'checkpoints' | 'tombstones' | 'pins' | 'retention' | 'holds' | 'pruned_commits' | 'fork_bases' | 'remote_refs';

/** Whether `name` exists in this Store (remembered per Store handle once seen). */
export function hasHistoryTable(store: ReadStore, name: HistoryTable): boolean {
  return store.hasTable(name);
}

/** Makes `name` if missing, in the running write transaction, before a row is written to it. */
export function ensureHistoryTable(store: Store, name: HistoryTable): void {
  store.createTable(name);
}

/** The rows `sql` reads from `table`, or none while the Store has not made that table. */
export function historyRows<T>(store: ReadStore, table: HistoryTable, sql: string, ...params: unknown[]): T[] {
  return hasHistoryTable(store, table) ? (store.db.prepare(sql).all(...params) as T[]) : [];
}

/** The first column of each row `sql` reads from `table`, or none while the table is missing. */
export function historyColumn<T>(store: ReadStore, table: HistoryTable, sql: string, ...params: unknown[]): T[] {
  return hasHistoryTable(store, table) ? (store.db.prepare(sql).pluck().all(...params) as T[]) : [];
}
