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
export { formatStat, type PatchRequest, type PatchResult, type FileStat, type PatchOptions } from './patch.js';
export type { ApplyOptions, ApplyResult } from './apply.js';
export type { FormatPatchOptions, FormatPatchResult } from './format-patch.js';
export type { RestoreResult } from './restore.js';
export type { GrepOptions, GrepResult, GrepMatch } from './grep.js';
export type { TarStats, TarSource } from '../store/index.js';
export type { BackupProgress } from '../store/index.js';
