/**
 * The fuse Projection: the Workspace row lives in the Store (lib/workspace/fuse.ts), its files
 * in a mount served by the Store's daemon (started on demand). Status, commit and end go to the
 * daemon; its commit publishes through lib/workspace/publish.ts like a materialized one. A FUSE
 * Workspace is `mounted` while a live daemon serves it and `lost` when not (the daemon stopped or
 * was killed): a lost one can only be ended with discard, which also detaches a stale mount left
 * behind. Registered with the seam when lib/fuse loads.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { BranchRow } from '../history/index.js';
import type { Store } from '../store/index.js';
import {
  forgetFuseWorkspace,
  ownsFuseWorkspace,
  recordFuseWorkspace,
  registerProjection,
  runningExecutions,
  stopExecution,
  type CreateRequest,
  type EndResult,
  type ProjectedCommit,
  type ProjectionImpl,
  type WorkspaceRow,
} from '../workspace/index.js';
import { commitFuse, fuseChanges, mountWorkspace, servedWorkspaces, unmountWorkspace } from './client.js';
import { detachStale } from './mounttab.js';
import { fuseAvailable } from './probe.js';
import type { FuseCommitOutcome } from './protocol.js';

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
async function create(store: Store, branch: BranchRow, at: string, req: CreateRequest): Promise<WorkspaceRow> {
  const ws = recordFuseWorkspace(store, branch, at, req.owner ?? null);
  try {
    await mountWorkspace(store.path, {
      workspaceId: toHex(ws.id),
      branchId: toHex(ws.branchId),
      path: ws.path,
      expectedHead: ws.expectedHeadId && toHex(ws.expectedHeadId),
      expectedBase: toHex(ws.expectedBaseId),
      rootId: toHex(ws.baseRootId),
      ...(req.backend ? { backend: req.backend } : {}),
    });
  } catch (e) {
    forgetFuseWorkspace(store, ws, '/nonexistent');
    throw e;
  }
  return ws;
}

async function changes(store: Store, ws: WorkspaceRow): Promise<{ changes: Awaited<ReturnType<typeof fuseChanges>>['changes']; skipped: string[]; truncated?: boolean }> {
  if (isLost(store.path, ws)) throw lostError(ws);
  const m = await fuseChanges(store.path, toHex(ws.id));
  return { changes: m.changes, skipped: [], ...(m.truncated ? { truncated: true } : {}) };
}

const fromHex = (h: string): Buffer => Buffer.from(h, 'hex');
const hexOrNull = (h: string | null): Buffer | null => (h === null ? null : fromHex(h));

/** The daemon's reply (hex ids, the whole Commit row) as the seam's outcome. */
function projected(r: FuseCommitOutcome): ProjectedCommit {
  switch (r.outcome) {
    case 'Created': {
      const commit = {
        id: fromHex(r.commitId),
        rootId: fromHex(r.rootId),
        parentCommitId: hexOrNull(r.previousHead),
        baseLayerId: fromHex(r.baseLayerId),
        createdMs: Date.parse(r.createdAt),
        message: r.message,
        metadata: r.metadata === null ? null : JSON.stringify(r.metadata),
        author: r.author,
        idVersion: 2,
      };
      const write = { objectsInserted: r.objectsInserted, objectsReused: r.objectsReused, bytesInserted: r.bytesInserted, bytesReused: r.bytesReused };
      return { outcome: 'Created', commit, previousHead: hexOrNull(r.previousHead), changedPaths: r.recordsWritten + r.deleted, write, ...(r.reconciled ? { reconciled: r.reconciled } : {}) };
    }
    case 'UpToDate':
      return { outcome: 'UpToDate', head: hexOrNull(r.head) };
    case 'Conflicted':
      return { outcome: 'Conflicted', head: hexOrNull(r.head), ms: r.ms };
    default:
      return { outcome: 'HeadMoved', expected: hexOrNull(r.expected), actual: hexOrNull(r.actual) };
  }
}

/** Commits through the daemon while the mount stays up; Busy while an execution runs in it. */
const commit: ProjectionImpl['commit'] = async (store, ws, stateDir, run) => {
  if (run.exclude?.length) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'excludes apply to materialized Workspaces; a FUSE Workspace commits what was written to it', { argument: 'exclude' });
  const running = runningExecutions(stateDir, toHex(ws.id));
  if (running.length > 0) return { outcome: { outcome: 'Busy', executions: running.map((e) => e.id) }, measure: { remote: { allocatedGrowth: 0 } } };
  let r: FuseCommitOutcome;
  try {
    r = await commitFuse(store.path, toHex(ws.id), { ...(run.note ? { note: run.note } : {}), strict: run.strict ?? false });
  } catch (e) {
    if (e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND') throw lostError(ws);
    throw e;
  }
  const reconcileMs = r.outcome === 'Created' ? r.reconciled?.ms : undefined;
  return { outcome: projected(r), measure: { remote: { ms: r.ms, allocatedGrowth: r.outcome === 'Created' ? r.allocatedGrowth : 0 }, ...(reconcileMs !== undefined ? { reconcileMs } : {}) } };
};

/** Unmounts (refusing uncommitted changes unless discard) and forgets the Workspace. */
async function end(store: Store, ws: WorkspaceRow, opts: { discard?: boolean }, stateDir: string): Promise<EndResult> {
  const id = toHex(ws.id);
  const running = runningExecutions(stateDir, id);
  if (running.length > 0) {
    if (!opts.discard) return { outcome: 'Busy', executions: running.map((e) => e.id) };
    for (const e of running) await stopExecution(stateDir, e.id);
  }
  let lost = isLost(store.path, ws);
  if (!lost) {
    try {
      // The daemon forgets the row once unmounted, so an end the caller does not live to finish
      // (a host kills an agent's process seconds after its session) leaves nothing behind.
      const r = await unmountWorkspace(store.path, id, { discard: opts.discard === true, forget: true });
      if (r.outcome === 'Dirty') {
        // Count paths as `workspace status` lists them (a new file is one change, not its
        // record plus its parent directory's).
        const n = await changes(store, ws).then(
          (m) => m.changes.length,
          () => r.pending.records + r.pending.deleted,
        );
        return { outcome: 'Dirty', changes: n, reason: 'uncommitted changes; commit them or end with --discard' };
      }
    } catch (e) {
      if (!(e instanceof LayerFsError && e.code === 'ERR_NOT_FOUND')) throw e;
      lost = true;
    }
  }
  if (lost) {
    if (!opts.discard) return { outcome: 'Dirty', changes: 0, reason: 'the mount is gone (its daemon stopped or was killed); end it with --discard' };
    // Only a mount this user's Workspace made: a row may name any path (a Store from elsewhere).
    if (ownsFuseWorkspace(store, ws)) await detachStale(ws.path);
  }
  forgetFuseWorkspace(store, ws, stateDir);
  return { outcome: 'Ended', discarded: opts.discard === true };
}

export const fuseProjection: ProjectionImpl = {
  available: () => fuseAvailable().ok,
  create,
  changes,
  commit,
  end,
  // mounted | lost, from the daemon's mount table file (no request).
  states(storePath, rows) {
    const served = servedWorkspaces(storePath);
    return rows.map((w) => (served.has(toHex(w.id)) ? 'mounted' : 'lost'));
  },
  execDir: (ws) => ws.path,
};

registerProjection('fuse', fuseProjection);
