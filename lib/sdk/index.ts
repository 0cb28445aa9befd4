/** The public API of layerfs. */
export { Client, type InitLayerStackOptions, type StateRef } from './client.js';
export type * from './types.js';
export { LayerFsError, isLayerFsError, type ErrorCode } from '../errors.js';
export { nativeInfo } from '../native/index.js';
export { NAME_PATTERN } from '../format/names.js';
export type { ImportProgress, ExportProgress, VerifyProgress } from '../store/index.js';
export type { DiffPage, DiffEntry, ChangeKind, ChangedField } from '../history/index.js';
export type { ExecutionInfo, ExecutionResources, ResourceUsage, SandboxState, SandboxProfile, SandboxOutcome, ShellSession } from '../workspace/index.js';
export type { CreateSandboxOptions, ShellOptions } from './sandbox.js';
export type { RemoveProgress } from '../workspace/index.js';
export type { MonitorSnapshot, OperationSummary, Receipt } from '../monitor/receipt.js';
export type { RemoteInfo, RemoteRefInfo, RemoteOptions, PushResult, FetchResult, FetchedRef, TransferStats, RemoteVerifyReport } from './remotes.js';
export type { ToolCallOptions, ToolCallResult, ToolCallWorkspace, ToolCallDecision, ToolCallOutcome, ToolCallChange, ToolCallExecResult } from './tool-call.js';
export type { CheckpointInfo, RewindResult, RewindTargetInfo } from './rewind.js';
