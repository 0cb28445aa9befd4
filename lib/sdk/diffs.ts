/**
 * Differences between states and bringing them elsewhere: paged diffs, git patches (whole or by
 * section), applying a state's changes to a directory, restoring Workspace paths, grep, and a
 * Workspace's uncommitted changes as a patch.
 */
import { LayerFsError } from '../errors.js';
import { diffStates, type DiffPage } from '../history/index.js';
import type { Store } from '../store/store.js';
import { resolveWorkspace } from '../workspace/index.js';
import { applyState, type ApplyOptions, type ApplyResult } from './apply.js';
import { grepState, type GrepOptions, type GrepResult } from './grep.js';
import { formatPairs, patchSections, pathFilters, statePairs, workspacePairs, type FileStat, type PatchRequest, type PatchResult } from './patch.js';
import { forkBase, resolveState } from './refs.js';
import { restorePaths, type RestoreResult } from './restore.js';
import type { StateRef } from './states.js';
import type { WorkspaceStatus } from './types.js';

const root = (store: Store, ref: StateRef): Buffer => resolveState(store, ref).rootId;

export function diff(store: Store, from: StateRef, to: StateRef, opts: { after?: string; limit?: number }): DiffPage {
  return store.read(() => diffStates(store, root(store, from), root(store, to), opts));
}

export function diffPatch(store: Store, from: StateRef, to: StateRef, opts: PatchRequest): PatchResult {
  return store.read(() => {
    const skipped: string[] = [];
    const pairs = statePairs(store, root(store, from), root(store, to), pathFilters(opts.paths), skipped);
    return formatPairs(pairs, opts, skipped);
  });
}

export function* diffPatchSections(store: Store, from: StateRef, to: StateRef, opts: PatchRequest & { skipped?: string[] }): Generator<{ text: Buffer; stat: FileStat }> {
  const skipped = opts.skipped ?? [];
  const pairs = store.read(() => statePairs(store, root(store, from), root(store, to), pathFilters(opts.paths), skipped));
  yield* patchSections(pairs, opts);
}

export function apply(store: Store, ref: StateRef, dir: string, opts: ApplyOptions & { from?: StateRef }): ApplyResult {
  const { base, state } = store.read(() => {
    const state = resolveState(store, ref);
    const base = opts.from !== undefined ? resolveState(store, opts.from) : forkBase(store, state);
    if (!base) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${ref} is the first Layer of its LayerStack and has no base`, { id: ref, hint: 'give --from STATE, or use `layerfs export`' });
    return { base, state };
  });
  return applyState(store, base.rootId, state.rootId, dir, opts);
}

export function restore(store: Store, ref: string, opts: { source: StateRef; paths: string[] }): RestoreResult {
  const w = resolveWorkspace(store, ref);
  return store.read(() => restorePaths(store, root(store, opts.source), w.path, opts.paths));
}

export function grep(store: Store, pattern: string, ref: StateRef, opts: GrepOptions): GrepResult {
  return store.read(() => grepState(store.view(root(store, ref)), pattern, opts));
}

/** `status` is the Workspace's status, just taken (its changes name the paths to compare). */
export function workspaceDiff(store: Store, ref: string, status: WorkspaceStatus, opts: PatchRequest): PatchResult {
  const w = resolveWorkspace(store, ref);
  return store.read(() => {
    const skipped: string[] = [];
    const pairs = workspacePairs(store, w.baseRootId, w.path, status.changes, pathFilters(opts.paths), skipped);
    return formatPairs(pairs, opts, skipped);
  });
}
