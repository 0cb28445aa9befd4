/** lib/workspace: Workspaces (the materialize projection, and the rows of FUSE ones), their changes, commits and executions. */
export * from './rows.js';
export { createWorkspace, workspaceStatus, commitWorkspace, endWorkspace, type CommitPhases, type CommitOutcome, type EndOutcome, type StatusEntry, type StatusChange } from './manager.js';
export * from './exec.js';
export { recordMountedWorkspace, forgetMountedWorkspace, ownsMountedWorkspace } from './mounted.js';
export { createSandbox, sandboxStates, stopSandbox, removeSandbox, sandboxPlan, type SandboxState } from './sandbox.js';
export { attachSandbox, resolveSandbox, sandboxOfWorkspace, type SandboxProfile, type SandboxProfileInput, type SandboxRow, type SandboxNetwork } from './sandbox-rows.js';
export { bwrapArgs, prepareLaunch, sandboxEnv, sandboxExit, type SandboxPlan, type SandboxOutcome } from './sandbox-launch.js';
export type { ResourceUsage } from './cgroup.js';
export type { ExecutionResources } from './exec-records.js';
export { startShell, type ShellRequest, type ShellSession } from './shell.js';
export { recordEnded, findEnded, type EndedWorkspace } from './ended.js';
export type { RemoveProgress } from './materialize.js';
export * from './owner.js';
export { listConflicts, resolveConflict, saveConflicts, type ConflictRecord, type Resolution } from './conflicts.js';
export { updateWorkspace, type UpdateOutcome } from './update.js';
export type { CommitRun, ReconcileReport } from './manager.js';
export { createResolutionWorkspace } from './add-resolve.js';
export { editFileRanges, type RangeEdit } from './ranges.js';
