/** The SDK side of rewind and checkpoints (lib/history/rewind.ts): typed results and receipts. */
import { toHex } from '../format/hex.js';
import { createCheckpoint, listCheckpoints, normalizeNote, resolveBranch, rewindBranch, type CheckpointRow } from '../history/index.js';
import type { Receipt } from '../monitor/monitor.js';
import type { Store } from '../store/store.js';
import { defaultAuthor } from './author.js';
import { commitInfo } from './convert.js';
import type { CommitInfo, CommitOptions } from './types.js';

export interface CheckpointInfo {
  branch: string;
  name: string;
  /** The head Commit pinned, or null when the Branch had no Commit yet (then its base Layer). */
  commitId: string | null;
  baseLayerId: string;
  rootId: string;
  createdAt: string;
}

export interface RewindTargetInfo {
  kind: 'checkpoint' | 'commit' | 'layer';
  id: string;
  rootId: string;
  checkpoint?: string;
}

export type RewindResult = Receipt &
  ({ outcome: 'Created'; commit: CommitInfo; previousHead: string | null; target: RewindTargetInfo } | { outcome: 'UpToDate'; head: string | null; target: RewindTargetInfo });

function checkpointInfo(branch: string, r: CheckpointRow): CheckpointInfo {
  return {
    branch,
    name: r.name,
    commitId: r.commitId ? toHex(r.commitId) : null,
    baseLayerId: toHex(r.baseLayerId),
    rootId: toHex(r.rootId),
    createdAt: new Date(r.createdMs).toISOString(),
  };
}

function plainReceipt(operation: string, outcome: string, t0: number): Receipt {
  return { operation, outcome, ms: performance.now() - t0, phases: {}, objectsInserted: 0, objectsReused: 0, bytesInserted: 0, bytesReused: 0, semanticGrowth: 0, allocatedGrowth: 0 };
}

export function rewind(store: Store, branch: string, to: string, opts: CommitOptions): RewindResult {
  const t0 = performance.now();
  const b = resolveBranch(store, branch);
  const ref = to.slice(0, 12);
  const note = normalizeNote({ message: opts.message ?? `rewind to ${ref}`, metadata: opts.metadata === undefined ? { rewindTo: to } : opts.metadata, author: opts.author }, defaultAuthor());
  const { target, published } = rewindBranch(store, b, to, note);
  const t: RewindTargetInfo = { kind: target.kind, id: toHex(target.id), rootId: toHex(target.rootId), ...(target.checkpoint ? { checkpoint: target.checkpoint } : {}) };
  const base = plainReceipt('branch.rewind', published.outcome, t0);
  if (published.outcome === 'Created') return { ...base, outcome: 'Created', commit: { ...commitInfo(published.commit), pruned: false }, previousHead: published.previousHead ? toHex(published.previousHead) : null, target: t };
  return { ...base, outcome: 'UpToDate', head: published.head ? toHex(published.head) : null, target: t };
}

export function checkpoint(store: Store, branch: string, name: string): CheckpointInfo {
  const b = resolveBranch(store, branch);
  return checkpointInfo(b.name, createCheckpoint(store, b, name));
}

export function checkpoints(store: Store, branch: string): CheckpointInfo[] {
  return store.read(() => {
    const b = resolveBranch(store, branch);
    return listCheckpoints(store, b.id).map((r) => checkpointInfo(b.name, r));
  });
}
