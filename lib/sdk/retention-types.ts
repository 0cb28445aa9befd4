/** Result types of deletion, renaming, pins, retention and gc. Ids are lowercase hex; times ISO-8601. */
import type { Receipt } from '../monitor/monitor.js';
import type { BranchInfo } from './types.js';

export type BranchDeleteResult = Receipt &
  (
    | {
        outcome: 'Deleted';
        branch: string;
        id: string;
        layerStack: string;
        /** The head Commit it had (null before its first Commit). */
        head: string | null;
        deletedAt: string;
        /** Workspaces `force` ended first. */
        workspacesEnded: string[];
      }
    /** A Workspace on it has uncommitted changes (give `discard` to drop them); nothing was deleted. */
    | { outcome: 'Dirty'; workspace: string; changes: number; reason: string; workspacesEnded: string[] }
    /** A Workspace on it runs a command; nothing was deleted. */
    | { outcome: 'Busy'; workspace: string; executions: string[]; workspacesEnded: string[] }
  );

export interface BranchRenameResult extends Receipt {
  outcome: 'Renamed';
  previousName: string;
  branch: BranchInfo;
}

export interface LayerStackDeleteResult extends Receipt {
  outcome: 'Deleted';
  layerStack: string;
  id: string;
  /** Names of the Branches deleted with it. */
  branches: string[];
  layers: number;
  commits: number;
  deletedAt: string;
}

/** A deleted Branch or LayerStack, as its tombstone records it. */
export interface DeletedInfo {
  kind: 'branch' | 'layerstack';
  id: string;
  name: string;
  layerStack: string;
  head: string | null;
  deletedAt: string;
}

export interface PinInfo {
  /** `layer:ID` or `commit:ID`. */
  state: string;
  rootId: string;
  createdAt: string;
}

export interface PinResult extends Receipt {
  outcome: 'Pinned' | 'AlreadyPinned' | 'Unpinned' | 'NotPinned';
  state: string;
}

export interface RetentionInfo {
  /** Each Branch keeps at least this many newest Commits (null: no count rule). */
  branchCommits: number | null;
  /** Commits younger than this (ms) are kept (null: no age rule). Both null: every Commit is kept. */
  olderThanMs: number | null;
}

/** The gc's own figures (store/gc.ts GcStats), as a receipt. */
export interface GcReceipt extends Receipt, Omit<GcStats, 'dryRun'> {
  outcome: 'Collected' | 'DryRun';
}

export type { GcProgress } from '../store/index.js';
import type { GcStats } from '../store/gc.js';
