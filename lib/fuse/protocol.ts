/**
 * The daemon's files and wire format, shared by daemon.ts and client.ts.
 *
 *   <store>.d/daemon.sock       Unix socket, mode 0600, JSON lines: one request, one response
 *   <store>.d/daemon.token      random token every request must carry (0600)
 *   <store>.d/mounts.json       what the daemon serves (to clean up after a crash)
 *   <store>.d/daemon-recovery.json  what the last start found (stale mounts, lost work)
 *   <store>.d/daemon.log        the daemon's stderr
 *   <store>.d/daemon.lock       flock(2)ed by the running daemon (the directory is 0700: no one
 *                               else can take or hold it)
 *   <store>.d/spool/<ws>/       private spool of each mounted Workspace
 */
import { realpathSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CommitNoteInput } from '../history/index.js';
import { LayerFsError } from '../errors.js';

export const PROTOCOL_VERSION = 1;
/** A request line longer than this is refused. */
export const MAX_LINE = 1 << 20;

export interface DaemonPaths {
  store: string;
  dir: string;
  socket: string;
  token: string;
  mounts: string;
  recovery: string;
  log: string;
  spool: string;
  /** File the running daemon holds an exclusive flock on: the kernel frees it when the process dies, even by SIGKILL. */
  lock: string;
}

/**
 * The Store's real path: every spelling of one Store (a symlink, `..`, a symlinked directory)
 * gets the same `<store>.d`, lock and daemon. A path that does not resolve is kept as given.
 */
export function canonicalStorePath(storePath: string): string {
  const abs = resolve(storePath);
  try {
    return realpathSync(abs);
  } catch {
    return abs;
  }
}

/**
 * A Store file with a second name would get a second `<store>.d` and daemon (and SQLite keeps
 * its WAL beside each name): refused.
 */
export function refuseHardLinkedStore(store: string): void {
  const n = statSync(store).nlink;
  if (n > 1) throw new LayerFsError('ERR_UNSAFE_PATH', `the Store file ${store} has ${n} names (hard links)`, { path: store, hint: 'keep one name for a Store; use a symbolic link for a second spelling' });
}

export function daemonPaths(storePath: string): DaemonPaths {
  const store = canonicalStorePath(storePath);
  const dir = `${store}.d`;
  return {
    store,
    dir,
    socket: join(dir, 'daemon.sock'),
    token: join(dir, 'daemon.token'),
    mounts: join(dir, 'mounts.json'),
    recovery: join(dir, 'daemon-recovery.json'),
    log: join(dir, 'daemon.log'),
    spool: join(dir, 'spool'),
    lock: join(dir, 'daemon.lock'),
  };
}

/**
 * A file in a mount's spool directory that exists while the Workspace has uncommitted changes.
 * The serving thread writes it before it answers the first change, so a daemon killed at any
 * point after that is reported as having lost work (mounts.json is saved a turn later).
 */
export function changedMarker(spoolDir: string): string {
  return join(spoolDir, 'changed');
}

export interface MountRequest {
  /** 32 hex digits. */
  workspaceId: string;
  /** 32 hex digits. */
  branchId: string;
  /** Absolute path of an empty directory. */
  path: string;
  /** The Branch head the Workspace starts from (64 hex digits), null before the first Commit. */
  expectedHead: string | null;
  /** The Branch's base Layer (64 hex digits). */
  expectedBase: string;
  /** The state to mount (64 hex digits). */
  rootId: string;
  /**
   * How the mount is served: 'kernel' (the only one) speaks the FUSE protocol over /dev/fuse
   * itself. 'fuse-native', removed, is refused with ERR_INVALID_ARGUMENT. See docs/FUSE.md.
   */
  backend?: Backend;
  /**
   * Let other users in (permissions are then checked against each inode's mode). Default: true
   * when the daemon runs as root, false otherwise (only the mounting user). Mounts are always
   * nosuid,nodev.
   */
  allowOther?: boolean;
}

export type Backend = 'kernel';

export interface MountRecord extends MountRequest {
  backend: Backend;
  mountedAt: string;
  /** Uncommitted changes exist (set on the first change after mount or commit). */
  dirty: boolean;
}

export interface MountStatus extends MountRecord {
  /** What a commit now would write. */
  pending: { records: number; deleted: number; directories: number };
  openHandles: number;
  committing: boolean;
  /** Kernel requests served, by operation (kernel backend). */
  requests?: Record<string, number>;
}

export interface RecoveryReport {
  at: string;
  /** Mount points of a previous daemon that were still attached (stale) and got detached. */
  cleaned: string[];
  /** Workspaces whose uncommitted changes died with the previous daemon. */
  lostUncommitted: { workspaceId: string; path: string; branchId: string }[];
  /** Workspaces the previous daemon served (their mounts are gone either way). */
  ended: { workspaceId: string; path: string }[];
}

export interface DaemonStatus {
  protocol: number;
  pid: number;
  storePath: string;
  startedAt: string;
  mounts: MountStatus[];
  recovered: RecoveryReport | null;
  /** The serving threads' polling of /dev/fuse before they block (kernel-spin.ts), since the daemon started. */
  spin?: { spinNs: number; spins: number; caught: number; spunNs: number };
  /** Serving threads kept idle for the next mount (`loaded`: ready), and the large commits that ended them (kernel-spare.ts). */
  spares?: { idle: number; loaded: number; yielded: number };
}

export type FuseCommitOutcome =
  | {
      outcome: 'Created';
      commitId: string;
      rootId: string;
      previousHead: string | null;
      /** The new Commit's base Layer and creation time: with commitId, rootId and previousHead, its whole row. */
      baseLayerId: string;
      createdAt: string;
      /** The Commit's note (part of its id). */
      message: string;
      metadata: Record<string, unknown> | null;
      author: string;
      /** SQLite pages the commit's write transaction allocated (bytes). */
      allocatedGrowth: number;
      ms: number;
      objectsInserted: number;
      objectsReused: number;
      bytesInserted: number;
      bytesReused: number;
      recordsWritten: number;
      deleted: number;
      namesChanged: number;
      bytesRead: number;
      chunksHashed: number;
      /** Files whose content the daemon stored before the commit (while they were written), which the commit took as stored. */
      prestoredFiles: number;
      /** Set when the head had moved: the changes were reconciled with it. */
      reconciled?: { merged: string[]; retries: number; ms: number };
    }
  | { outcome: 'UpToDate'; head: string | null; rootId: string; ms: number }
  | { outcome: 'HeadMoved'; expected: string | null; actual: string | null; ms: number }
  /** Nothing published; the conflicts are in the Store (workspace_conflicts). */
  | { outcome: 'Conflicted'; head: string | null; conflicts: number; ms: number };

export type UnmountOutcome = { outcome: 'Unmounted'; discarded: boolean } | { outcome: 'Dirty'; pending: MountStatus['pending'] };

export type StopOutcome = { outcome: 'Stopped'; unmounted: string[] } | { outcome: 'Dirty'; workspaces: string[] };

export type Request =
  | ({ op: 'mount' } & MountRequest)
  | { op: 'commit'; workspaceId: string; note?: CommitNoteInput; strict?: boolean }
  | { op: 'unmount'; workspaceId: string; discard?: boolean; forget?: boolean }
  | { op: 'changes'; workspaceId: string }
  | { op: 'status' }
  | { op: 'stop'; discard?: boolean };

/** What changed in a mounted Workspace since its base, per path (sorted by path). */
export interface FuseChanges {
  changes: { change: 'added' | 'deleted' | 'modified' | 'renamed'; path: string; oldPath?: string; kind: string }[];
  /** More changes exist than were listed. */
  truncated: boolean;
}

export interface WireError {
  code: string;
  message: string;
  [detail: string]: unknown;
}

export type Response = { ok: true; result: unknown } | { ok: false; error: WireError };
