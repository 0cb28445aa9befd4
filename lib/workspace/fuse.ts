/**
 * Rows of FUSE Workspaces (projection 'fuse'). The files live in a mount the per-Store daemon
 * serves (lib/fuse), so this tier only records the Workspace and forgets it again; mounting,
 * status, commit and unmount are the FUSE Projection's (lib/fuse/projection.ts).
 */
import { existsSync, mkdirSync, rmdirSync } from 'node:fs';
import { toHex } from '../format/hex.js';
import { branchRoot, getBranch, uuidv7, type BranchRow } from '../history/index.js';
import type { Store } from '../store/index.js';
import { forgetExecutions } from './exec.js';
import { setWorkspaceOwner, type ProcessRef } from './owner.js';
import { dropMarker, isMarkedDir, readMarker, writeMarker } from './marker.js';
import { deleteWorkspaceRow, getWorkspace, insertWorkspace, workspaceTarget, type WorkspaceRow } from './rows.js';

/** Records a FUSE Workspace of the Branch head at `at` (created empty when absent); nothing is written there. */
export function recordFuseWorkspace(store: Store, branch: BranchRow, at: string, owner: ProcessRef | null = null): WorkspaceRow {
  const dir = workspaceTarget(store, at);
  const existed = existsSync(dir);
  mkdirSync(dir, { recursive: true });
  const id = uuidv7();
  writeMarker(store.path, id, dir, !existed);
  store.writeSync(() => {
    const b = getBranch(store, branch.id)!;
    insertWorkspace(store, { id, branchId: b.id, path: dir, projection: 'fuse', baseRootId: branchRoot(store, b), expectedHeadId: b.headCommitId, expectedBaseId: b.baseLayerId });
    if (owner) setWorkspaceOwner(store, id, owner);
  });
  return getWorkspace(store, id)!;
}

/** Whether this user created the FUSE Workspace here (its marker exists): only then may its mount be detached. */
export function ownsFuseWorkspace(store: Store, ws: WorkspaceRow): boolean {
  const m = readMarker(store.path, ws.id);
  return m !== null && m.path === ws.path;
}

/**
 * Forgets a FUSE Workspace whose mount is gone: its row, its execution records, and its (now
 * empty) mount point when the Workspace made that directory (never one the user had made, nor
 * one a row merely names). Call only after the daemon unmounted it or the stale mount was detached.
 */
export function forgetFuseWorkspace(store: Store, ws: WorkspaceRow, stateDir: string): void {
  store.writeSync(() => deleteWorkspaceRow(store, ws.id));
  forgetExecutions(stateDir, toHex(ws.id));
  const made = readMarker(store.path, ws.id)?.created === true && isMarkedDir(store.path, ws.id, ws.path);
  dropMarker(store.path, ws.id);
  if (!made) return;
  try {
    rmdirSync(ws.path);
  } catch {
    /* not empty (something was written under the unmounted directory) or gone: leave it */
  }
}
