/** Commit outcomes as the daemon reports them (hex ids, plain numbers). */
import { toHex } from '../format/hex.js';
import type { OverlayCommitOutcome } from './overlay.js';
import type { MountedCommitOutcome } from './protocol.js';

export function wireOutcome(out: OverlayCommitOutcome): MountedCommitOutcome {
  const ms = Math.round(out.ms * 1000) / 1000;
  if (out.outcome === 'HeadMoved') return { outcome: 'HeadMoved', expected: out.expected && toHex(out.expected), actual: out.actual && toHex(out.actual), ms };
  if (out.outcome === 'UpToDate') return { outcome: 'UpToDate', head: out.head && toHex(out.head), rootId: toHex(out.rootId), ms };
  return {
    outcome: 'Created',
    commitId: toHex(out.commit.id),
    rootId: toHex(out.rootId),
    previousHead: out.previousHead && toHex(out.previousHead),
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
  outcome: MountedCommitOutcome;
  changed: boolean;
}
