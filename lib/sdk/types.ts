/** Public result types of the SDK. Ids are lowercase hex strings; times are ISO-8601. */
import type { Receipt } from '../monitor/monitor.js';
import type { Contributor, DedupReport, StateUsage } from '../store/analyze.js';
import type { TreeCounts } from '../store/tree/inode.js';

export type { Receipt };

export interface LayerStackInfo {
  id: string;
  name: string;
  headLayerId: string;
  createdAt: string;
}

export interface LayerInfo {
  id: string;
  layerStackId: string;
  layerStack: string;
  seq: number;
  parentLayerId: string | null;
  rootId: string;
  sourceBranchId: string | null;
  sourceCommitId: string | null;
  createdAt: string;
}

export type EntryKind = 'file' | 'dir' | 'symlink' | 'fifo' | 'chardev' | 'blockdev';

export interface EntryInfo {
  /** The name as UTF-8 text (invalid sequences replaced); `nameBytes` has the exact bytes. */
  name: string;
  nameBytes: Buffer;
  kind: EntryKind;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtimeNs: bigint;
  nlink: number;
  serial: number;
  target?: string;
}

export interface InitReceipt extends Receipt, TreeCounts {
  outcome: 'Created';
  layerStack: LayerStackInfo;
  layer: LayerInfo;
  skipped: string[];
}

export type { DaemonStatus, MountStatus as DaemonMount, RecoveryReport } from '../fuse/index.js';

export type StopDaemonResult = { outcome: 'Stopped'; unmounted: string[] } | { outcome: 'Dirty'; workspaces: string[] } | { outcome: 'NotRunning' };

export interface StoreInfoResult {
  path: string;
  formatVersion: number;
  storeId: string;
  createdAt: string;
  layerStacks: number;
  layers: number;
  objects: number;
  fileBytes: number;
}

export interface ExportReceipt extends Receipt, TreeCounts {
  outcome: 'Exported';
  target: string;
}

/** What `repack` did: the Store's physical form before and after (ids and content never change). */
export interface RepackReceipt extends Receipt {
  outcome: 'Repacked';
  /** zstd level of the rewritten groups and frames. */
  level: number;
  /** Pack rows that existed when repack started and were rewritten, and the rows that replaced them. */
  rowsBefore: number;
  rowsAfter: number;
  /** Rows an earlier repack wrote (at this level or higher), left as they are unless `full`. */
  rowsSkipped: number;
  /** Rows kept as they were because rewritten they would have taken more bytes (a repack never grows them). */
  rowsKept: number;
  /** Objects moved to new rows. */
  objects: number;
  /** Stored bytes of the old rows, and of the new ones. */
  storedBytesBefore: number;
  storedBytesAfter: number;
  /** The Store file's size (pages) before and after, the WAL not counted. */
  fileBytesBefore: number;
  fileBytesAfter: number;
  /** Write transactions of the rewrite (each bounded, so a crash loses at most one). */
  transactions: number;
  rewriteMs: number;
  vacuumMs: number;
}

/** Progress of a repack (rows rewritten of the rows that existed when it started). */
export type { RepackProgress } from '../store/index.js';

export interface VerifyResult {
  ok: boolean;
  states: number;
  objectsChecked: number;
  bytesChecked: number;
  sqliteCheck: string;
  damaged: { objectId: string; message: string; states: string[] }[];
}

export interface BranchInfo {
  id: string;
  name: string;
  layerStackId: string;
  layerStack: string;
  baseLayerId: string;
  headCommitId: string | null;
  /** The root the Branch exposes now (its head Commit's, else its base Layer's). */
  rootId: string;
  createdAt: string;
}

export interface CommitInfo {
  id: string;
  rootId: string;
  parentCommitId: string | null;
  baseLayerId: string;
  createdAt: string;
  /** The note, part of the id ('' / null / '' for Commits made before format 4). */
  message: string;
  metadata: Record<string, unknown> | null;
  author: string;
  /** In `log`: retention no longer keeps this Commit (db gc may reclaim its state). */
  pruned?: boolean;
}

/** What `commitWorkspace` records with a Commit; all part of its id. */
export interface CommitOptions {
  message?: string;
  /** Free-form JSON object: agent, tool call id, model… (at most 64 KiB as JSON). */
  metadata?: Record<string, unknown> | null;
  /** Default: $LAYERFS_AUTHOR, else user@host. */
  author?: string;
  /** Materialized Workspaces: gitignore patterns whose new paths stay out of this Commit. */
  exclude?: string[];
  /** HeadMoved instead of reconciling when the Branch head moved since the Workspace's base. */
  strict?: boolean;
}

/** One overlap a reconciling commit found; `id` is what resolveWorkspaceConflict takes. */
export interface ConflictInfo {
  id: number;
  path: string;
  kind: string;
  headPath?: string;
  message: string;
  lines?: { base: [number, number]; head: [number, number]; workspace: [number, number] }[];
  /** Large files merged chunk by chunk: byte ranges [start, end) of each region both sides changed. */
  ranges?: { base: [number, number]; head: [number, number]; workspace: [number, number] }[];
  headCommitId: string | null;
  resolution: 'branch' | 'layer' | 'working-tree' | null;
  createdAt: string;
}

/** A reconciling commit: the paths whose result combines both sides, retries of the compare-and-swap, time (ms). */
export interface ReconcileInfo {
  merged: string[];
  retries: number;
  ms: number;
}

export interface WorkspaceInfo {
  id: string;
  branchId: string;
  branch: string;
  path: string;
  projection: 'materialize' | 'fuse';
  /** active: a materialized Workspace; mounted: a FUSE one its daemon serves; lost: a FUSE one whose mount is gone (end it with discard). */
  state: 'active' | 'mounted' | 'lost';
  baseRootId: string;
  expectedHeadId: string | null;
  createdAt: string;
  /** The Sandbox its executions and shells run in, when it has one. */
  sandbox?: string;
}

export interface WorkspaceStatus {
  workspace: WorkspaceInfo;
  clean: boolean;
  changes: { change: 'added' | 'deleted' | 'modified' | 'renamed'; path: string; oldPath?: string; kind: string }[];
  skipped: string[];
  /** FUSE Workspaces: more changes exist than were listed (the daemon lists at most 100,000). */
  truncated?: boolean;
}

export type CommitResult = Receipt &
  (
    | { outcome: 'Created'; commit: CommitInfo; previousHead: string | null; changedPaths: number; reconciled?: ReconcileInfo }
    | { outcome: 'UpToDate'; head: string | null }
    | { outcome: 'Busy'; executions: string[] }
    | { outcome: 'HeadMoved'; expected: string | null; actual: string | null }
    | { outcome: 'Conflicted'; head: string | null; conflicts: ConflictInfo[] }
  );

export type AddResult = Receipt &
  (
    | { outcome: 'Added'; layer: LayerInfo; previousHead: string; reconciled?: ReconcileInfo }
    /** Nothing added; settle the conflicts in `resolutionWorkspace`, commit it, then add its Branch. */
    | { outcome: 'Conflicted'; head: string; conflicts: ConflictInfo[]; resolutionWorkspace: WorkspaceInfo }
    | { outcome: 'UpToDate'; layer: LayerInfo }
    | { outcome: 'NoChanges'; head: string }
    | { outcome: 'HeadMoved'; expected: string; actual: string }
  );

export type UpdateResult = Receipt & ({ outcome: 'Updated'; head: string | null; written: number } | { outcome: 'UpToDate'; head: string | null } | { outcome: 'Busy'; executions: string[] });

export type EndResult = Receipt & ({ outcome: 'Ended'; discarded: boolean; kept?: string } | { outcome: 'Dirty'; changes: number; reason: string } | { outcome: 'Busy'; executions: string[] });

/** The Store's dedup report with every state and contributor labelled (`Branch@commit`, `LayerStack#seq`), plus per-Branch totals. */
export interface DedupAnalysis extends Omit<DedupReport, 'states' | 'largest'> {
  states: (StateUsage & { label: string })[];
  branches: { name: string; logicalBytes: number; newBytes: number; dedupRatio: number }[];
  largest: (Contributor & { label: string; path: string })[];
}

/** What `backup` wrote: a verified copy of the Store. */
export interface BackupReceipt extends Receipt {
  outcome: 'BackedUp';
  path: string;
  pages: number;
  fileBytes: number;
  /** Time copying pages, and re-hashing every state of the copy. */
  copyMs: number;
  verifyMs: number;
  states: number;
  objectsChecked: number;
}
