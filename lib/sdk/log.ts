/**
 * A Branch's Commits, newest first (or a checkpoint's, from the Commit it pinned): over the
 * Store's read side, so the Client and the Reader share it. Only the path filter needs the diff
 * of two trees; its caller (the Client) hands that in, so `layerfs log BRANCH` loads no diff code.
 */
import { toHex } from '../format/hex.js';
import { branchLog } from '../history/branches.js';
import { getLayer } from '../history/layerstacks.js';
import { keptCommits } from '../history/retention.js';
import type { BranchRow, CommitRow } from '../history/rows.js';
import type { ReadStore } from '../store/store-read.js';
import { LayerFsError } from '../errors.js';
import { commitInfo } from './convert.js';
import { resolveLogStart } from './refs.js';
import type { CommitInfo } from './types.js';

/** Whether `path` differs between two roots (history/diff-path.ts touchesPath). */
export type TouchesPath = (fromRoot: Buffer, toRoot: Buffer, path: string) => boolean;

export function commitLog(store: ReadStore, branch: string, opts: { limit?: number; path?: string }, touchesPath?: TouchesPath): CommitInfo[] {
  return store.read(() => {
    const kept = keptCommits(store);
    const info = (c: CommitRow): CommitInfo => ({ ...commitInfo(c), pruned: !kept.has(toHex(c.id)) });
    // A Branch from its head, or a checkpoint from the Commit it pinned.
    const start = resolveLogStart(store, branch);
    const b: BranchRow = { ...start.branch, headCommitId: start.head };
    if (opts.path === undefined) return branchLog(store, b, opts.limit).map(info);
    if (!touchesPath) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'a log by path needs the Client (this reader does not diff trees)');
    const path = opts.path;
    const all = branchLog(store, b);
    const baseRoot = (c: (typeof all)[number]): Buffer => (c.parentCommitId ? all.find((p) => p.id.equals(c.parentCommitId!))?.rootId : undefined) ?? getLayer(store, c.baseLayerId)!.rootId;
    const out: CommitInfo[] = [];
    for (const c of all) {
      if (out.length >= (opts.limit ?? Number.MAX_SAFE_INTEGER)) break;
      if (touchesPath(baseRoot(c), c.rootId, path)) out.push(info(c));
    }
    return out;
  });
}
