/**
 * The Projection seam: how a Workspace's files exist (materialize: a directory written from the
 * state; fuse: a live mount). Every Workspace operation that depends on it goes through one
 * `ProjectionImpl`, looked up by the row's `projection`; callers never branch on the name. This
 * folder registers materialize (materialized.ts); lib/fuse registers fuse when it loads, as the
 * tiers say (mount builds on workspace, never the reverse). Both publish their Commits through
 * publish.ts.
 */
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { BranchRow, CommitRow } from '../history/index.js';
import type { ExportProgress, Store, WriteStats } from '../store/index.js';
import type { CommitPhases, CommitRun, EndOutcome, ReconcileReport, StatusChange } from './manager.js';
import type { RemoveProgress } from './materialize.js';
import type { ProcessRef } from './owner.js';
import type { Projection, WorkspaceRow } from './rows.js';

/** active (materialized), mounted (a live daemon serves it) or lost (its daemon is gone). */
export type WorkspaceState = 'active' | 'mounted' | 'lost';

export interface CreateRequest {
  /** The process a tool call's Workspace belongs to. */
  owner?: ProcessRef | null;
  /** fuse: the transport serving the mount. */
  backend?: 'kernel';
  /** materialize: files written so far. */
  onProgress?: (p: ExportProgress) => void;
}

/** One changed path, as `workspace status` prints it (UTF-8 text). */
export interface ChangeEntry {
  change: StatusChange;
  path: string;
  oldPath?: string;
  kind: string;
}

export interface WorkspaceChanges {
  changes: ChangeEntry[];
  /** Paths the walk could not read (materialize). */
  skipped: string[];
  /** More changes exist than were listed. */
  truncated?: boolean;
}

/** A projection's commit outcome; a Conflicted one's conflicts are in the Store (workspace_conflicts). */
export type ProjectedCommit =
  | { outcome: 'Created'; commit: CommitRow; previousHead: Buffer | null; changedPaths: number; write: WriteStats; reconciled?: ReconcileReport }
  | { outcome: 'UpToDate'; head: Buffer | null }
  | { outcome: 'Busy'; executions: string[] }
  | { outcome: 'HeadMoved'; expected: Buffer | null; actual: Buffer | null }
  | { outcome: 'Conflicted'; head: Buffer | null; ms: number };

/** How a commit was measured, for its receipt. */
export interface CommitMeasure {
  /** Wall time by phase, when the commit ran in this process. */
  phases?: CommitPhases;
  /** When it ran elsewhere (the mount daemon): its own time (ms; none when it did not run) and allocated growth. */
  remote?: { ms?: number; allocatedGrowth: number };
  /** Time spent reconciling with a moved head (ms), reported as its own phase. */
  reconcileMs?: number;
}

export type EndRequest = { discard?: boolean; onProgress?: (p: RemoveProgress) => void };

export type EndResult = EndOutcome | { outcome: 'Ended'; discarded: boolean };

export interface ProjectionImpl {
  /** Whether this machine can serve Workspaces of this projection. */
  available(): boolean;
  create(store: Store, branch: BranchRow, at: string, req: CreateRequest): Promise<WorkspaceRow>;
  /** What changed, per path, since the Workspace last matched a stored state. */
  changes(store: Store, ws: WorkspaceRow): Promise<WorkspaceChanges>;
  /** Busy while an execution runs in it; otherwise stores and publishes (publish.ts). */
  commit(store: Store, ws: WorkspaceRow, stateDir: string, run: CommitRun): Promise<{ outcome: ProjectedCommit; measure: CommitMeasure }>;
  /** Removes the projection and forgets the Workspace; never commits (Dirty with changes unless discard). */
  end(store: Store, ws: WorkspaceRow, req: EndRequest, stateDir: string): Promise<EndResult>;
  /** The state of each of these rows (all of this projection). */
  states(storePath: string, rows: WorkspaceRow[]): WorkspaceState[];
  /** The directory executions run in (and their files are read from). */
  execDir(ws: WorkspaceRow): string;
}

const registry = new Map<Projection, ProjectionImpl>();

export function registerProjection(name: Projection, impl: ProjectionImpl): void {
  registry.set(name, impl);
}

/** The implementation of a projection (ERR_INVALID_ARGUMENT when none is loaded under that name). */
export function projectionOf(name: Projection): ProjectionImpl {
  const p = registry.get(name);
  if (!p) throw new LayerFsError('ERR_INVALID_ARGUMENT', `the ${name} projection is not loaded in this process`, { hint: name === 'fuse' ? 'import the package entry point (it loads lib/fuse)' : 'fuse or materialize' });
  return p;
}

/**
 * The projection to use: the one asked for, else `$LAYERFS_PROJECTION`, else `fallback` (the
 * SDK: materialize; the CLI: auto). `auto` is fuse when this machine can serve FUSE mounts
 * (/dev/fuse usable, root or fusermount), else materialize.
 */
export function chooseProjection(asked?: string, fallback: 'materialize' | 'auto' = 'materialize'): Projection {
  const want = asked ?? (process.env.LAYERFS_PROJECTION || fallback);
  if (want === 'materialize' || want === 'fuse') return want;
  if (want !== 'auto') throw new LayerFsError('ERR_INVALID_ARGUMENT', `unknown projection ${JSON.stringify(want)}`, { hint: 'fuse, materialize or auto' });
  return registry.get('fuse')?.available() ? 'fuse' : 'materialize';
}

/** Each row's state (by hex id), asking each projection once for its own rows. */
export function workspaceStates(storePath: string, rows: WorkspaceRow[]): Map<string, WorkspaceState> {
  const out = new Map<string, WorkspaceState>();
  const groups = new Map<Projection, WorkspaceRow[]>();
  for (const w of rows) {
    const g = groups.get(w.projection);
    if (g) g.push(w);
    else groups.set(w.projection, [w]);
  }
  for (const [name, group] of groups) {
    const states = projectionOf(name).states(storePath, group);
    group.forEach((w, i) => out.set(toHex(w.id), states[i]!));
  }
  return out;
}
