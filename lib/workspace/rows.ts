/** Workspace rows: the Store records every Workspace so any process can commit or end it. */
import { LayerFsError } from '../errors.js';
import { uniqueByPrefix, type WorkspaceRoot } from '../history/index.js';
import { prepared, type Store } from '../store/index.js';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { resolve, sep } from 'node:path';
import { dropCache } from './cache.js';
import { findEnded } from './ended.js';

export type Projection = 'materialize' | 'fuse';

export interface WorkspaceRow {
  id: Buffer;
  branchId: Buffer;
  path: string;
  projection: Projection;
  /** The root the Workspace's files matched when created or last committed. */
  baseRootId: Buffer;
  expectedHeadId: Buffer | null;
  expectedBaseId: Buffer;
  state: string;
  createdMs: number;
}

export const WORKSPACE_COLUMNS =
  'id, branch_id AS branchId, path, projection, base_root_id AS baseRootId, expected_head_id AS expectedHeadId, expected_base_id AS expectedBaseId, state, created_ms AS createdMs';

export function getWorkspace(store: Store, id: Buffer): WorkspaceRow | undefined {
  return prepared(store.db, `SELECT ${WORKSPACE_COLUMNS} FROM workspaces WHERE id = ?`).get(id) as WorkspaceRow | undefined;
}

export function listWorkspaces(store: Store, branchId?: Buffer): WorkspaceRow[] {
  if (branchId) return store.db.prepare(`SELECT ${WORKSPACE_COLUMNS} FROM workspaces WHERE branch_id = ? ORDER BY created_ms`).all(branchId) as WorkspaceRow[];
  return store.db.prepare(`SELECT ${WORKSPACE_COLUMNS} FROM workspaces ORDER BY created_ms`).all() as WorkspaceRow[];
}

/**
 * Every open Workspace's base root, for retention (history `keptStates`): gc keeps what they
 * reach. Read it in the same transaction as the rest of the kept states.
 */
export function workspaceRoots(store: Store): WorkspaceRoot[] {
  return store.db.prepare('SELECT id, base_root_id AS rootId FROM workspaces').all() as WorkspaceRoot[];
}

/** The open Workspaces (hex ids) on any of these Branches: what a Branch or LayerStack deletion refuses on (history `OpenWorkspacesOn`). */
export function openWorkspacesOn(store: Store, branchIds: readonly Buffer[]): string[] {
  const q = store.db.prepare('SELECT lower(hex(id)) FROM workspaces WHERE branch_id = ? ORDER BY created_ms').pluck();
  return branchIds.flatMap((b) => q.all(b) as string[]);
}

/** A Workspace by id (or unambiguous prefix) or by its directory. */
export function resolveWorkspace(store: Store, ref: string): WorkspaceRow {
  const dir = resolve(ref);
  const byPath = prepared(store.db, `SELECT ${WORKSPACE_COLUMNS} FROM workspaces WHERE path = ?`).get(dir) as WorkspaceRow | undefined;
  if (byPath) return byPath;
  const id = /^[0-9a-fA-F]+$/.test(ref) ? uniqueByPrefix(ref, 16, 'Workspace', (lo, hi, limit) => store.db.prepare('SELECT id FROM workspaces WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?').pluck().all(lo, hi, limit) as Buffer[]) : undefined;
  const row = (id && getWorkspace(store, id)) || (existsSync(dir) ? workspaceContaining(store, dir) : undefined);
  if (row) return row;
  const ended = findEnded(store.path, ref, dir);
  if (ended) {
    throw new LayerFsError('ERR_NOT_FOUND', `Workspace ${ended.id} (${ended.path}) has ended (${ended.endedAt})`, {
      id: ended.id,
      path: ended.path,
      hint: 'its Commits stay on its Branch; start another with `layerfs workspace create BRANCH --at DIR`',
    });
  }
  throw new LayerFsError('ERR_NOT_FOUND', `no Workspace with id or directory ${JSON.stringify(ref)}`, { id: ref, hint: 'list them with `layerfs query workspaces`, or run the command inside a Workspace' });
}

/** The Workspace whose directory is `dir` or contains it (the innermost, should they nest). */
export function workspaceContaining(store: Store, dir: string): WorkspaceRow | undefined {
  let real = resolve(dir);
  try {
    real = realpathSync(dir);
  } catch {
    /* a path that is gone can still name a Workspace */
  }
  let best: WorkspaceRow | undefined;
  for (const w of listWorkspaces(store)) {
    const inside = real === w.path || real.startsWith(w.path.endsWith(sep) ? w.path : w.path + sep) || dir === w.path || dir.startsWith(w.path + sep);
    if (inside && (!best || w.path.length > best.path.length)) best = w;
  }
  return best;
}

/**
 * The absolute directory a new Workspace may use: absent or empty (a projection never mixes
 * with files it did not write) and not already another Workspace's.
 */
export function workspaceTarget(store: Store, at: string): string {
  const dir = resolve(at);
  if (existsSync(dir)) {
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch {
      throw new LayerFsError('ERR_NOT_A_DIRECTORY', `${dir} exists and is not a directory`, { path: dir });
    }
    if (entries.length > 0) throw new LayerFsError('ERR_NOT_EMPTY', `${dir} is not empty`, { path: dir, hint: '--at must name an empty or absent directory' });
  }
  if (store.db.prepare('SELECT 1 FROM workspaces WHERE path = ?').get(dir)) {
    throw new LayerFsError('ERR_EXISTS', `a Workspace already uses ${dir}`, { path: dir });
  }
  return dir;
}

/**
 * The writes of the `workspaces` table: this folder owns it, so every statement that changes a
 * row is here (owner.ts keeps the owner columns).
 */
export function insertWorkspace(store: Store, row: Omit<WorkspaceRow, 'state' | 'createdMs'>): void {
  store.db
    .prepare('INSERT INTO workspaces (id, branch_id, path, projection, base_root_id, expected_head_id, expected_base_id, state, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
    .run(row.id, row.branchId, row.path, row.projection, row.baseRootId, row.expectedHeadId, row.expectedBaseId, 'active', Date.now());
}

/**
 * The state a Workspace now matches (after a commit, or moving onto the head): its base root and
 * the head it expects; `expectedBase` too when it moved onto another base Layer.
 */
export function setWorkspaceBase(store: Store, id: Buffer, rootId: Buffer, expectedHead: Buffer | null, expectedBase?: Buffer): void {
  prepared(store.db, 'UPDATE workspaces SET base_root_id = ?, expected_head_id = ?, expected_base_id = coalesce(?, expected_base_id) WHERE id = ?').run(rootId, expectedHead, expectedBase ?? null, id);
}

/** Removes the row and its stat cache, inside the caller's write transaction (conflicts and the Sandbox link go by cascade). */
export function deleteWorkspaceRow(store: Store, id: Buffer): void {
  dropCache(store, id);
  store.db.prepare('DELETE FROM workspaces WHERE id = ?').run(id);
}

/** The directories of every Workspace row. */
export function workspacePaths(store: Store): string[] {
  return (store.db.prepare('SELECT path FROM workspaces').pluck().all() as string[]).map(String);
}
