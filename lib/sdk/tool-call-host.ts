/**
 * The Client operations a tool call and its standbys use: the Client provides them, and
 * tool-call.ts and standby.ts name only this interface, so neither depends on client.ts.
 */
import type { Monitor } from '../monitor/monitor.js';
import type { ExecutionInfo } from '../workspace/index.js';
import type { CommitOptions, CommitResult, EndResult, WorkspaceStatus } from './types.js';

export interface ToolCallHost {
  readonly monitor: Monitor;
  workspaceStatus(ref: string): Promise<WorkspaceStatus>;
  commitWorkspace(ref: string, opts?: CommitOptions): Promise<CommitResult>;
  endWorkspace(ref: string, opts?: { discard?: boolean }): Promise<EndResult>;
  execDetached(ref: string, argv: string[], opts?: { env?: NodeJS.ProcessEnv }): ExecutionInfo;
  executionOutput(id: string, opts: { follow?: boolean; write: (chunk: Buffer) => void; signal?: AbortSignal }): Promise<ExecutionInfo>;
  stopExecution(id: string, opts?: { graceMs?: number }): Promise<{ outcome: 'Stopped' | 'AlreadyEnded'; info: ExecutionInfo }>;
}
