/** lib/workspace: Workspaces (the materialize projection, and the rows of FUSE ones), their changes, commits and executions. */
export * from './rows.js';
export { createWorkspace, workspaceStatus, commitWorkspace, endWorkspace, type CommitPhases, type CommitOutcome, type EndOutcome, type StatusEntry, type StatusChange } from './manager.js';
export * from './exec.js';
export { recordMountedWorkspace, forgetMountedWorkspace } from './mounted.js';
export { listConflicts, resolveConflict, saveConflicts, type ConflictRecord, type Resolution } from './conflicts.js';
export { updateWorkspace, type UpdateOutcome } from './update.js';
export type { CommitRun, ReconcileReport } from './manager.js';
export { createResolutionWorkspace } from './add-resolve.js';
export { editFileRanges, type RangeEdit } from './ranges.js';
