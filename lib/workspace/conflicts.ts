/**
 * Conflicts of a Workspace's reconciling commits (table workspace_conflicts): kept until the
 * Workspace commits, so `workspace conflicts` can list them and `workspace resolve` can settle
 * them one by one. A resolution puts the chosen version in the Workspace's working tree and
 * marks the path, and the next reconciling commit takes the Workspace's version there.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LayerFsError } from '../errors.js';
import { branchRoot, getBranch, type ReconcileConflict } from '../history/index.js';
import { exportEntry, prepared, type FsView, type Store } from '../store/index.js';
import type { WorkspaceRow } from './rows.js';
import { ensureWorkspaceTable, hasWorkspaceTable, workspaceRows } from './tables.js';

export type Resolution = 'branch' | 'layer' | 'working-tree';

export interface ConflictRecord extends ReconcileConflict {
  /** The number `workspace resolve` takes. */
  id: number;
  headCommitId: Buffer | null;
  resolution: Resolution | null;
  createdMs: number;
}

interface Row {
  seq: number;
  path: string;
  kind: string;
  head_commit_id: Buffer | null;
  detail: string;
  resolution: string | null;
  created_ms: number;
}

/** Replaces the Workspace's open conflicts with `conflicts` (resolved ones stay until a commit). */
export function saveConflicts(store: Store, workspaceId: Buffer, head: Buffer | null, conflicts: ReconcileConflict[]): void {
  store.writeSync(() => {
    // Nothing to record and nothing recorded before: the Store need not make the table.
    if (conflicts.length === 0 && !hasWorkspaceTable(store, 'workspace_conflicts')) return;
    ensureWorkspaceTable(store, 'workspace_conflicts');
    store.db.prepare('DELETE FROM workspace_conflicts WHERE workspace_id = ? AND resolution IS NULL').run(workspaceId);
    const resolved = new Set((store.db.prepare('SELECT path FROM workspace_conflicts WHERE workspace_id = ?').all(workspaceId) as { path: string }[]).map((r) => r.path));
    const top = store.db.prepare('SELECT max(seq) AS m FROM workspace_conflicts WHERE workspace_id = ?').get(workspaceId) as { m: number | null };
    let seq = top.m ?? 0;
    const ins = store.db.prepare('INSERT INTO workspace_conflicts (workspace_id, seq, path, kind, head_commit_id, detail, resolution, created_ms) VALUES (?, ?, ?, ?, ?, ?, NULL, ?)');
    const now = Date.now();
    for (const c of conflicts) {
      if (resolved.has(c.path)) continue;
      const detail = JSON.stringify({ message: c.message, ...(c.headPath ? { headPath: c.headPath } : {}), ...(c.lines ? { lines: c.lines } : {}), ...(c.ranges ? { ranges: c.ranges } : {}) });
      ins.run(workspaceId, ++seq, c.path, c.kind, head, detail, now);
    }
  });
}

export function listConflicts(store: Store, workspaceId: Buffer): ConflictRecord[] {
  const rows = workspaceRows<Row>(store, 'workspace_conflicts', 'SELECT seq, path, kind, head_commit_id, detail, resolution, created_ms FROM workspace_conflicts WHERE workspace_id = ? ORDER BY seq', workspaceId);
  return rows.map((r) => {
    const d = JSON.parse(r.detail) as Pick<ReconcileConflict, 'message' | 'headPath' | 'lines' | 'ranges'>;
    return { id: r.seq, path: r.path, kind: r.kind as ReconcileConflict['kind'], ...d, headCommitId: r.head_commit_id, resolution: r.resolution as Resolution | null, createdMs: r.created_ms };
  });
}

/** Paths whose conflict was resolved: the next reconciling commit takes the Workspace's version there. */
export function resolvedPaths(store: Store, workspaceId: Buffer): Set<string> {
  const rows = workspaceRows<{ path: string }>(store, 'workspace_conflicts', 'SELECT path FROM workspace_conflicts WHERE workspace_id = ? AND resolution IS NOT NULL', workspaceId);
  return new Set(rows.map((r) => r.path));
}

export function clearConflicts(store: Store, workspaceId: Buffer): void {
  if (hasWorkspaceTable(store, 'workspace_conflicts')) prepared(store.db, 'DELETE FROM workspace_conflicts WHERE workspace_id = ?').run(workspaceId);
}

function pathParts(path: string): Buffer[] {
  return path.split('/').filter((p) => p.length > 0).map((p) => Buffer.from(p, 'utf8'));
}

/** Puts `view`'s entry at `path` (or its absence) at `target`. */
function place(view: FsView, path: string, target: string): void {
  rmSync(target, { recursive: true, force: true });
  let serial: number;
  try {
    serial = view.resolve(pathParts(path), path).serial;
  } catch (e) {
    if (e instanceof LayerFsError && (e.code === 'ERR_NOT_FOUND' || e.code === 'ERR_NOT_A_DIRECTORY')) return;
    throw e;
  }
  mkdirSync(dirname(target), { recursive: true });
  exportEntry(view, serial, target);
}

/**
 * Settles conflict `id`: --branch writes the head's version into the working tree, --layer the
 * Workspace's base version, --working-tree keeps what is there. The path is then marked so the
 * next commit takes the working tree's version.
 */
export function resolveConflict(store: Store, ws: WorkspaceRow, id: number, how: Resolution): ConflictRecord {
  const c = listConflicts(store, ws.id).find((x) => x.id === id);
  if (!c) throw new LayerFsError('ERR_NOT_FOUND', `Workspace has no conflict ${id}`, { id: String(id), hint: 'list them with `layerfs workspace conflicts WS`' });
  if (ws.projection !== 'materialize' && how !== 'working-tree') {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `resolve --${how} needs a materialized Workspace`, { hint: 'copy the version you want into the mount, then resolve --working-tree' });
  }
  const target = join(ws.path, c.path);
  store.read(() => {
    if (how === 'branch') {
      const b = getBranch(store, ws.branchId)!;
      place(store.view(branchRoot(store, b)), c.headPath ?? c.path, target);
    } else if (how === 'layer') place(store.view(ws.baseRootId), c.path, target);
  });
  store.writeSync(() => store.db.prepare('UPDATE workspace_conflicts SET resolution = ? WHERE workspace_id = ? AND seq = ?').run(how, ws.id, id));
  return { ...c, resolution: how };
}
