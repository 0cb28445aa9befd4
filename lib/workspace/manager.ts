/**
 * The materialize projection's lifecycle: create (write a Branch head into a directory), status
 * (a walk compared with the stat cache), commit (record what changed, then publish.ts's
 * compare-and-swap, in commit.ts) and end (remove the directory; never commits). The FUSE projection
 * (lib/fuse) implements the same steps over a live mount; projection.ts joins the two.
 */
import { existsSync } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { branchRoot, getBranch, uuidv7, type BranchRow } from '../history/index.js';
import type { ExportProgress, Store } from '../store/index.js';
import { walkRelPath, WalkKind } from '../native/walk.js';
import { loadCache, saveCache, type StatCache } from './cache.js';
import { computeChangesSync, kindName, type ChangeSet } from './changes.js';
import { forgetExecutions, runningExecutions, stopExecution } from './exec.js';
import { dropMarker, isMarkedDir, writeMarker } from './marker.js';
import { materialize, removeProjection, type RemoveProgress } from './materialize.js';
import { isSmudged, racyUnchanged, refreshConfirmed, type Confirmed } from './racy.js';
import { setWorkspaceOwner, type ProcessRef } from './owner.js';
import { dirChangedItself } from './status-dirs.js';
import { deleteWorkspaceRow, getWorkspace, insertWorkspace, workspaceTarget, type Projection, type WorkspaceRow } from './rows.js';

export { commitWorkspace, type CommitOutcome, type CommitPhases, type CommitRun, type ReconcileReport } from './commit.js';

/**
 * Creates a materialized Workspace (`projection` must be materialize: a FUSE one is created
 * through its Projection, which lib/fuse registers). `owner`: the process a tool call's
 * Workspace belongs to (owner.ts), recorded with the row; `onProgress`: files written so far.
 */
export function createWorkspace(
  store: Store,
  branch: BranchRow,
  at: string,
  projection: Projection = 'materialize',
  opts: { owner?: ProcessRef | null; onProgress?: (p: ExportProgress) => void } = {},
): WorkspaceRow {
  const { owner = null, onProgress } = opts;
  if (projection !== 'materialize') {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `createWorkspace materializes; a ${projection} Workspace is created through its projection`, { hint: 'use projectionOf(name).create' });
  }
  const dir = workspaceTarget(store, at);
  const { head, base, root } = store.read(() => {
    const b = getBranch(store, branch.id)!;
    return { head: b.headCommitId, base: b.baseLayerId, root: branchRoot(store, b) };
  });
  const existed = existsSync(dir);
  const cache = materialize(store, root, dir, onProgress);
  const id = uuidv7();
  try {
    writeMarker(store.path, id, dir, !existed);
    store.writeSync(() => {
      insertWorkspace(store, { id, branchId: branch.id, path: dir, projection, baseRootId: root, expectedHeadId: head, expectedBaseId: base });
      if (owner) setWorkspaceOwner(store, id, owner);
      saveCache(store, id, cache);
    });
  } catch (e) {
    removeProjection(dir, { keepRoot: existed });
    dropMarker(store.path, id);
    throw e;
  }
  return getWorkspace(store, id)!;
}

export type StatusChange = 'added' | 'deleted' | 'modified' | 'renamed';

export interface StatusEntry {
  change: StatusChange;
  path: Buffer;
  oldPath?: Buffer;
  kind: string;
}

/**
 * What changed since the Workspace last matched a stored state, like `git status`; racy entries
 * it confirms unchanged are written back into the stat cache when it can (refreshConfirmed).
 */
export function workspaceStatus(store: Store, ws: WorkspaceRow): { entries: StatusEntry[]; skipped: string[] } {
  const cache = loadCache(store, ws.id);
  const cs = computeChangesSync(ws.path, cache);
  const base = store.view(ws.baseRootId);
  const confirmed: Confirmed[] = [];
  const same = {
    dir: (i: number, s: number) => !dirChangedItself(base, s, cs.absPath(i)),
    racy: (i: number, s: number) => {
      const fromMs = Date.now();
      const j = cs.oldIndex[i]!;
      return racyUnchanged(base, s, cs.absPath(i), cs.changedSerials.get(s)?.parents.length ?? 0, (st) => confirmed.push({ j, st, fromMs }));
    },
  };
  const entries = statusEntries(cs, cache, same);
  if (confirmed.length > 0) refreshConfirmed(store, ws, cache, confirmed);
  return { entries, skipped: cs.skipped };
}

/**
 * `same.dir(i, serial)`: whether directory entry i, mode unchanged, is unchanged as a diff counts
 * it; `same.racy(i, serial)`: whether entry i, racy in the cache (racy.ts), still records
 * exactly its stored record.
 */
function statusEntries(cs: ChangeSet, cache: StatCache, same: { dir: (i: number, serial: number) => boolean; racy: (i: number, serial: number) => boolean }): StatusEntry[] {
  const out: StatusEntry[] = [];
  const { now, oldIndex } = cs;
  // Old entry → the entry now at its path, to tell whether an old path still holds its serial.
  let nowAt: Int32Array | null = null;
  // Rename sources: per changed serial, an old path of it that no longer holds it.
  let sourceOf: Map<number, number> | null = null;
  const renamedFrom = new Set<number>();
  for (let i = 1; i < now.count; i++) {
    if (!cs.changed[i]) continue;
    const rel = cs.relPath(i);
    const kind = kindName(now.kind[i]!);
    const s = now.serial[i]!;
    const j = oldIndex[i]!;
    if (j >= 0 && cache.serial[j] === s) {
      // A directory whose mode stayed changed only if its owner or xattrs did: its mtime moves
      // with its entries (they are listed), which a diff does not count as its own change.
      const ownChange = now.kind[i] !== WalkKind.Dir || cache.mode[j] !== now.mode[i] || !same.dir(i, s);
      // A racy entry reads as changed whatever happened to it: its content decides.
      if (ownChange && !(isSmudged(cache, j) && now.kind[i] === cache.kind[j] && same.racy(i, s))) out.push({ change: 'modified', path: rel, kind });
      continue;
    }
    if (!sourceOf) {
      nowAt = new Int32Array(cache.count).fill(-1);
      for (let k = 0; k < now.count; k++) if (oldIndex[k]! >= 0) nowAt[oldIndex[k]!] = k;
      sourceOf = new Map();
      for (let q = 1; q < cache.count; q++) {
        const qs = cache.serial[q]!;
        if (!cs.changedSerials.has(qs) || sourceOf.has(qs)) continue;
        const k = nowAt[q]!;
        // Only a path that disappeared is a rename source; one that holds something else now
        // is modified, and the inode's new name is added.
        if (k < 0) sourceOf.set(qs, q);
      }
    }
    const from = sourceOf.get(s);
    if (from !== undefined) {
      out.push({ change: 'renamed', path: rel, oldPath: walkRelPath(cache, from), kind });
      renamedFrom.add(from);
    } else out.push({ change: j >= 0 ? 'modified' : 'added', path: rel, kind });
  }
  for (const d of cs.deletedPaths) if (!renamedFrom.has(d)) out.push({ change: 'deleted', path: walkRelPath(cache, d), kind: kindName(cache.kind[d]!) });
  return out.sort((a, b) => Buffer.compare(a.path, b.path));
}

/**
 * `kept`: the directory the row names was left in place, because this user's `<store>.d` has no
 * record of creating it there (a Store from elsewhere) or it is no longer the same directory.
 */
export type EndOutcome = { outcome: 'Ended'; discarded: boolean; kept?: string } | { outcome: 'Dirty'; changes: number; reason: string } | { outcome: 'Busy'; executions: string[] };

export async function endWorkspace(store: Store, ws: WorkspaceRow, opts: { discard?: boolean; onProgress?: (p: RemoveProgress) => void }, stateDir: string): Promise<EndOutcome> {
  const running = runningExecutions(stateDir, toHex(ws.id));
  if (running.length > 0) {
    if (!opts.discard) return { outcome: 'Busy', executions: running.map((e) => e.id) };
    for (const e of running) await stopExecution(stateDir, e.id);
  }
  if (!opts.discard) {
    if (!existsSync(ws.path)) return { outcome: 'Dirty', changes: 0, reason: 'the Workspace directory is gone; use --discard to end it' };
    const { entries } = workspaceStatus(store, ws);
    if (entries.length > 0) return { outcome: 'Dirty', changes: entries.length, reason: 'uncommitted changes; commit them or end with --discard' };
  }
  // Only what this Workspace itself created is removed: never a directory a row merely names.
  const ours = isMarkedDir(store.path, ws.id, ws.path);
  if (ours) removeProjection(ws.path, { onProgress: opts.onProgress });
  store.writeSync(() => deleteWorkspaceRow(store, ws.id));
  dropMarker(store.path, ws.id);
  forgetExecutions(stateDir, toHex(ws.id));
  return { outcome: 'Ended', discarded: Boolean(opts.discard), ...(ours || !existsSync(ws.path) ? {} : { kept: ws.path }) };
}
