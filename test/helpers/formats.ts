/**
 * Turns a Store made by this layerfs back into an older format, exactly as that format's
 * writers left it, so upgrade tests start from a real older schema. Each format change adds its
 * undo here, newest first.
 */
import type { Database } from 'better-sqlite3';
import { LAZY_TABLES } from '../../lib/store/schema.js';

const UNDO: { from: number; sql: string; fn?: (db: Database) => void }[] = [
  // Format 12 names a codec-3 row's dictionary by a ref into `dictionaries` (made on first use).
  { from: 12, sql: '', fn: undoDictionaryRefs },
  // Format 11 makes LAZY_TABLES on first use: format 10 had every one of them (format 12's dictionaries aside).
  { from: 11, sql: Object.entries(LAZY_TABLES).filter(([name]) => name !== 'dictionaries').map(([, sql]) => sql).join('\n') },
  // Format 10 adds a codec and a kind, no tables: a Store no repack has dictionary-coded is format 9 as is.
  { from: 10, sql: '' },
  { from: 9, sql: 'DROP TABLE workspace_conflicts;' },
  { from: 8, sql: 'DROP TABLE tombstones; DROP TABLE pins; DROP TABLE retention; DROP TABLE holds; DROP TABLE fork_bases; DROP TABLE pruned_commits;' },
  { from: 7, sql: 'DROP TABLE checkpoints; ALTER TABLE workspaces DROP COLUMN owner_pid; ALTER TABLE workspaces DROP COLUMN owner_start; ALTER TABLE workspaces DROP COLUMN owner_boot;' },
  { from: 6, sql: 'DROP TABLE remote_refs; DROP TABLE remotes;' },
  { from: 5, sql: 'DROP TABLE workspace_sandboxes; DROP TABLE sandboxes;' },
  { from: 4, sql: 'ALTER TABLE commits DROP COLUMN message; ALTER TABLE commits DROP COLUMN metadata; ALTER TABLE commits DROP COLUMN author; ALTER TABLE commits DROP COLUMN id_version;' },
  { from: 2, sql: 'ALTER TABLE objects DROP COLUMN base; ALTER TABLE objects DROP COLUMN at;' },
];

function undoDictionaryRefs(db: Database): void {
  if (db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'dictionaries'").get() === undefined) return;
  db.exec('UPDATE objects SET base = (SELECT d.id FROM dictionaries d WHERE d.ref = objects.base) WHERE codec = 3 AND length(base) <> 32; DROP TABLE dictionaries;');
}

export function asFormat(db: Database, version: number): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  for (const u of UNDO) {
    if (u.from <= version || u.from > current) continue;
    db.exec(u.sql);
    u.fn?.(db);
  }
  db.pragma(`user_version = ${version}`);
}
