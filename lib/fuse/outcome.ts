/** Commit outcomes as the daemon reports them (hex ids, plain numbers). */
import { toHex } from '../format/hex.js';
import type { OverlayChange, OverlayCommitOutcome } from './overlay.js';
import type { FuseChanges, FuseCommitOutcome } from './protocol.js';

export function wireOutcome(out: OverlayCommitOutcome, allocatedGrowth = 0): FuseCommitOutcome {
  const ms = Math.round(out.ms * 1000) / 1000;
  if (out.outcome === 'HeadMoved') return { outcome: 'HeadMoved', expected: out.expected && toHex(out.expected), actual: out.actual && toHex(out.actual), ms };
  if (out.outcome === 'UpToDate') return { outcome: 'UpToDate', head: out.head && toHex(out.head), rootId: toHex(out.rootId), ms };
  if (out.outcome === 'Conflicted') return { outcome: 'Conflicted', head: out.head && toHex(out.head), conflicts: out.conflicts.length, ms };
  return {
    outcome: 'Created',
    commitId: toHex(out.commit.id),
    rootId: toHex(out.rootId),
    previousHead: out.previousHead && toHex(out.previousHead),
    baseLayerId: toHex(out.commit.baseLayerId),
    createdAt: new Date(out.commit.createdMs).toISOString(),
    message: out.commit.message,
    metadata: out.commit.metadata === null ? null : (JSON.parse(out.commit.metadata) as Record<string, unknown>),
    author: out.commit.author,
    allocatedGrowth,
    ms,
    objectsInserted: out.write.objectsInserted,
    objectsReused: out.write.objectsReused,
    bytesInserted: out.write.bytesInserted,
    bytesReused: out.write.bytesReused,
    recordsWritten: out.build.records,
    deleted: out.build.deleted,
    namesChanged: out.build.names,
    bytesRead: out.build.bytesRead,
    chunksHashed: out.build.chunksHashed,
    prestoredFiles: out.build.prestored,
    ...(out.reconciled ? { reconciled: out.reconciled } : {}),
  };
}

/** What the daemon needs to know about a served Workspace at any moment. */
export interface ServedState {
  changed: boolean;
  pending: { records: number; deleted: number; directories: number };
  openHandles: number;
  committing: boolean;
  requests?: Record<string, number>;
}

/** A commit as the daemon sees it: the outcome plus whether changes remain after it. */
export interface ServedCommit {
  outcome: FuseCommitOutcome;
  changed: boolean;
}

/** Changed paths as the daemon reports them (UTF-8 text, as `workspace status` prints). */
export function wireChanges(r: { changes: OverlayChange[]; truncated: boolean }): FuseChanges {
  const text = (b: Buffer) => b.toString('utf8');
  return {
    changes: r.changes.map((c) => ({ change: c.change, path: text(c.path), ...(c.oldPath ? { oldPath: text(c.oldPath) } : {}), kind: c.kind })),
    truncated: r.truncated,
  };
}
