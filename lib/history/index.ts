/** lib/history: LayerStacks, Layers, Branches, Commits, Add and diff over a Store. */
export * from './layerstacks.js';
export * from './branches.js';
export * from './add.js';
export * from './rows.js';
export { layerId, commitId, commitIdV2, uuidv7 } from './ids.js';
export * from './note.js';
export { uniqueByPrefix, type IdsBetween } from './resolve.js';
export { resolveRemoteRef, remoteRefs, setRemoteRef, type RemoteRefTarget, type RemoteRefRow } from './remote-refs.js';
export * from './diff.js';
export { touchesPath } from './diff-path.js';
export * from './rewind.js';
export * from './git-patch.js';
export * from './tombstones.js';
export * from './retention.js';
export { countUnreachableCommits, removeUnreachableCommits, unreachableCommits } from './commit-reclaim.js';
export { reconcileStates, maxSerial, type ReconcileConflict, type ReconcileResult, type ConflictKind, type LineConflict, type ByteConflict } from './reconcile.js';
export { publishReconciled, type Reconciliation, type ReconciledPublish } from './reconcile-publish.js';
export * from './remote-rows.js';
