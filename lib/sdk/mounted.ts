/**
 * FUSE Workspaces in the SDK: the Workspace row lives in the Store (lib/workspace/mounted.ts),
 * its files in a mount served by the Store's daemon (lib/mount). Status, commit and end go to
 * the daemon, which starts on demand. A FUSE Workspace is `mounted` while a live daemon serves
 * it and `lost` when not (the daemon stopped or was killed): a lost one can only be ended with
 * discard, which also detaches a stale mount left behind.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { BranchRow } from '../history/index.js';
import {
  commitMounted,
  daemonStatus,
  detachStale,
  fuseAvailable,
  mountedChanges,
  mountWorkspace,
  servedWorkspaces,
  unmountWorkspace,
  type Backend,
  type MountedChanges,
  type MountedCommitOutcome,
} from '../mount/index.js';
import type { Store } from '../store/index.js';
import { forgetMountedWorkspace, ownsMountedWorkspace, recordMountedWorkspace, runningExecutions, stopExecution, type ProcessRef, type Projection, type WorkspaceRow } from '../workspace/index.js';
import type { CommitNote } from '../history/index.js';

export type WorkspaceState = 'active' | 'mounted' | 'lost';

/**
 * The projection to use: the one asked for, else `$LAYERFS_PROJECTION`, else `fallback` (the
 * SDK: materialize; the CLI: auto). `auto` is fuse when this machine can serve FUSE mounts
 * (/dev/fuse usable, root or fusermount), else materialize.
 */
export function chooseProjection(asked?: string, fallback: 'materialize' | 'auto' = 'materialize'): Projection {
  const want = asked ?? (process.env.LAYERFS_PROJECTION || fallback);
  if (want === 'materialize' || want === 'fuse') return want;
  if (want !== 'auto') throw new LayerFsError('ERR_INVALID_ARGUMENT', `unknown projection ${JSON.stringify(want)}`, { hint: 'fuse, materialize or auto' });
  return fuseAvailable().ok ? 'fuse' : 'materialize';
}

/** mounted | lost for FUSE Workspaces (from the daemon's mount table file; no request). */
export function workspaceStates(storePath: string, rows: WorkspaceRow[]): Map<string, WorkspaceState> {
  const out = new Map<string, WorkspaceState>();
  const served = rows.some((w) => w.projection === 'fuse') ? servedWorkspaces(storePath) : new Set<string>();
  for (const w of rows) {
    const id = toHex(w.id);
    out.set(id, w.projection !== 'fuse' ? 'active' : served.has(id) ? 'mounted' : 'lost');
  }
  return out;
}

function lostError(ws: WorkspaceRow): LayerFsError {
  return new LayerFsError('ERR_NOT_FOUND', `the mount of Workspace ${toHex(ws.id)} is gone (its daemon stopped or was killed)`, {
    id: toHex(ws.id),
    path: ws.path,
    hint: 'end it with --discard; uncommitted changes died with the mount',
  });
}

function isLost(storePath: string, ws: WorkspaceRow): boolean {
  return !servedWorkspaces(storePath).has(toHex(ws.id));
}

/** Records the Workspace and mounts it (starting the daemon when none runs). */
export async function createMountedWorkspace(store: Store, branch: BranchRow, at: string, opts: { backend?: Backend; owner?: ProcessRef } = {}): Promise<WorkspaceRow> {
  const ws = recordMountedWorkspace(store, branch, at, opts.owner ?? null);
  try {
    await mountWorkspace(store.path, {
      workspaceId: toHex(ws.id),
      branchId: toHex(ws.branchId),
      path: ws.path,
      expectedHead: ws.expectedHeadId && toHex(ws.expectedHeadId),
      expectedBase: toHex(ws.expectedBaseId),
      rootId: toHex(ws.baseRootId),
      ...(opts.backend ? { backend: opts.backend } : {}),
    });
  } catch (e) {
    forgetMountedWorkspace(store, ws, '/nonexistent');
    throw e;
  }
  return ws;
}

export async function mountedWorkspaceChanges(store: Store, ws: WorkspaceRow): Promise<MountedChanges> {
  if (isLost(store.path, ws)) throw lostError(ws);
  return mountedChanges(store.path, toHex(ws.id));
}

export type MountedCommit = { outcome: 'Busy'; executions: string[] } | MountedCommitOutcome;

/** Commits through the daemon while the mount stays up; Busy while an execution runs in it. */
export async function commitMountedWorkspace(store: Store, ws: WorkspaceRow, stateDir: string, note: CommitNote, strict = false): Promise<MountedCommit> {
  const running = runningExecutions(stateDir, toHex(ws.id));
  if (running.length > 0) return { outcome: 'Busy', executions: running.map((e) => e.id) };
  try {
    return await commitMounted(store.path, toHex(ws.id), { note, strict });
  } catch (e) {
    if (e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND') throw lostError(ws);
    throw e;
  }
}

export type MountedEnd = { outcome: 'Ended'; discarded: boolean } | { outcome: 'Dirty'; changes: number; reason: string } | { outcome: 'Busy'; executions: string[] };

/** Unmounts (refusing uncommitted changes unless discard) and forgets the Workspace. */
export async function endMountedWorkspace(store: Store, ws: WorkspaceRow, opts: { discard?: boolean }, stateDir: string): Promise<MountedEnd> {
  const id = toHex(ws.id);
  const running = runningExecutions(stateDir, id);
  if (running.length > 0) {
    if (!opts.discard) return { outcome: 'Busy', executions: running.map((e) => e.id) };
    for (const e of running) await stopExecution(stateDir, e.id);
  }
  let lost = isLost(store.path, ws);
  if (!lost) {
    try {
      const r = await unmountWorkspace(store.path, id, { discard: opts.discard === true });
      if (r.outcome === 'Dirty') {
        // Count paths as `workspace status` lists them (a new file is one change, not its
        // record plus its parent directory's).
        const changes = await mountedWorkspaceChanges(store, ws).then(
          (m) => m.changes.length,
          () => r.pending.records + r.pending.deleted,
        );
        return { outcome: 'Dirty', changes, reason: 'uncommitted changes; commit them or end with --discard' };
      }
    } catch (e) {
      if (!(e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND')) throw e;
      lost = true;
    }
  }
  if (lost) {
    if (!opts.discard) return { outcome: 'Dirty', changes: 0, reason: 'the mount is gone (its daemon stopped or was killed); end it with --discard' };
    // Only a mount this user's Workspace made: a row may name any path (a Store from elsewhere).
    if (ownsMountedWorkspace(store, ws)) await detachStale(ws.path);
  }
  forgetMountedWorkspace(store, ws, stateDir);
  return { outcome: 'Ended', discarded: opts.discard === true };
}

export { daemonStatus };
