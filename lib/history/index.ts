/** lib/history: LayerStacks, Layers, Branches, Commits, Add and diff over a Store. */
export * from './layerstacks.js';
export * from './branches.js';
export * from './add.js';
export * from './rows.js';
export { layerId, commitId, commitIdV2, uuidv7 } from './ids.js';
export * from './note.js';
export { uniqueByPrefix, resolveRemoteRef, type RemoteRefTarget } from './resolve.js';
export * from './diff.js';
export { touchesPath } from './diff-path.js';
export * from './rewind.js';
export * from './git-patch.js';
export * from './tombstones.js';
export * from './retention.js';
export { countUnreachableCommits, removeUnreachableCommits, unreachableCommits } from './commit-reclaim.js';
export { reconcileStates, maxSerial, type ReconcileConflict, type ReconcileResult, type ConflictKind, type LineConflict, type ByteConflict } from './reconcile.js';
export { publishReconciled, type Reconciliation, type ReconciledPublish } from './reconcile-publish.js';
