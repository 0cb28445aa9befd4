/** The public API of layerfs. */
export { Client, type InitLayerStackOptions, type StateRef } from './client.js';
export type * from './types.js';
export { LayerFsError, isLayerFsError, type ErrorCode } from '../errors.js';
export { nativeInfo } from '../native/index.js';
export { NAME_PATTERN } from '../format/names.js';
export type { ImportProgress } from '../store/index.js';
export type { DiffPage, DiffEntry, ChangeKind, ChangedField } from '../history/index.js';
export type { ExecutionInfo } from '../workspace/index.js';
export type { MonitorSnapshot, OperationSummary, Receipt } from '../monitor/receipt.js';
export type { ToolCallOptions, ToolCallResult, ToolCallWorkspace, ToolCallDecision, ToolCallOutcome, ToolCallChange, ToolCallExecResult } from './tool-call.js';
export type { CheckpointInfo, RewindResult, RewindTargetInfo } from './rewind.js';
export { chooseProjection } from './mounted.js';
