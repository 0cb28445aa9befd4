/**
 * Rows of FUSE Workspaces (projection 'fuse'). The files live in a mount the per-Store daemon
 * serves (lib/mount), so this layer only records the Workspace and forgets it again; mounting,
 * status, commit and unmount go through the daemon (the SDK routes them).
 */
import { existsSync, mkdirSync, readdirSync, rmdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { branchRoot, getBranch, uuidv7, type BranchRow } from '../history/index.js';
import type { Store } from '../store/index.js';
import { dropCache } from './cache.js';
import { forgetExecutions } from './exec.js';
import { getWorkspace, type WorkspaceRow } from './rows.js';

/** Records a FUSE Workspace of the Branch head at `at` (created empty when absent); nothing is written there. */
export function recordMountedWorkspace(store: Store, branch: BranchRow, at: string): WorkspaceRow {
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
  mkdirSync(dir, { recursive: true });
  const id = uuidv7();
  store.writeSync(() => {
    const b = getBranch(store, branch.id)!;
    store.db
      .prepare('INSERT INTO workspaces (id, branch_id, path, projection, base_root_id, expected_head_id, expected_base_id, state, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(id, b.id, dir, 'fuse', branchRoot(store, b), b.headCommitId, b.baseLayerId, 'active', Date.now());
  });
  return getWorkspace(store, id)!;
}

/**
 * Forgets a FUSE Workspace whose mount is gone: its row, its execution records, and its (now
 * empty) mount point. Call only after the daemon unmounted it or the stale mount was detached.
 */
export function forgetMountedWorkspace(store: Store, ws: WorkspaceRow, stateDir: string): void {
  store.writeSync(() => {
    dropCache(store, ws.id);
    store.db.prepare('DELETE FROM workspaces WHERE id = ?').run(ws.id);
  });
  forgetExecutions(stateDir, toHex(ws.id));
  try {
    rmdirSync(ws.path);
  } catch {
    /* not empty (something was written under the unmounted directory) or gone: leave it */
  }
}
