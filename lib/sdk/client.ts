/**
 * Client: the public API. One Client binds one Store and one Monitor. Every mutating operation
 * returns a typed receipt; failures are LayerFsError with a stable `code`. A thin class: each
 * method delegates to its area module (states.ts, branches.ts, diffs.ts, maintenance.ts,
 * retention.ts and remotes.ts through HistoryClient; workspaces.ts, tool-call.ts, sandbox.ts
 * here). Workspaces go through the Projection seam and never ask which projection they have.
 */
import { invalidArgument } from '../errors.js';
import { toHex } from '../format/hex.js';
import type { MonitorSnapshot } from '../monitor/monitor.js';
import { Store } from '../store/store.js';
import { writableAsIs } from '../store/store-file.js';
import type { ExportProgress } from '../store/export.js';
import { editFileRanges, getExecution, listExecutions, readOutput, resolveWorkspace, stopExecution, type ExecutionInfo, type RangeEdit, type RemoveProgress } from '../workspace/index.js';
import type { SandboxState, ShellSession } from '../workspace/index.js';
import { closeDaemonConnection, daemonStatus, stopDaemon } from '../fuse/index.js';
import { HistoryClient, transfers } from './client-history.js';
import * as diffs from './diffs.js';
import type { PatchRequest, PatchResult } from './patch.js';
import { conflictInfos, resolveConflictOf, updateWorkspaceOf } from './reconcile.js';
import type * as remotes from './remotes.js';
import { createSandbox, openShell, removeSandbox, sandboxStatus, stopSandbox, type CreateSandboxOptions, type ShellOptions } from './sandbox.js';
import { endStandbys } from './standby.js';
import { openOwnedWorkspace, runToolCall, type ToolCallDecision, type ToolCallOptions, type ToolCallResult, type ToolCallWorkspace } from './tool-call.js';
import type { CommitOptions, CommitResult, ConflictInfo, DaemonStatus, EndResult, StopDaemonResult, UpdateResult, WorkspaceInfo, WorkspaceStatus } from './types.js';
import * as workspaces from './workspaces.js';

export type { InitLayerStackOptions, StateRef } from './states.js';

export class Client extends HistoryClient {
  private constructor(store: Store) {
    super(store);
  }

  /** Creates a new Store file (refusing an existing path) and connects to it. */
  static create(path: string): Client {
    return new Client(Store.create(path));
  }

  /**
   * Clones the remote at `url` (postgres://…; its password, if any, is used once and not stored)
   * into a new Store at `path`, recording it as remote `origin` (docs/REMOTES.md).
   */
  static async clone(url: string, path: string, opts: remotes.RemoteOptions & { layerStack?: string; remote?: string } = {}): Promise<{ client: Client; result: remotes.FetchResult }> {
    const { store, result } = await (await transfers()).clone(url, path, opts);
    return { client: new Client(store), result };
  }

  /**
   * Connects to an existing Store, checking that it is a Store of a supported format. With
   * `readonly` and `mapped`, the Store's pages are read through a memory map (large reads cost
   * less CPU; the pages read count toward the process's resident memory): for short-lived readers.
   */
  static connect(path: string, opts: { readonly?: boolean; mapped?: boolean } = {}): Client {
    if (opts.mapped && !opts.readonly) throw invalidArgument('mapped needs readonly: only a read-only connection maps the Store', { argument: 'mapped', hint: 'connect with { readonly: true, mapped: true }' });
    return new Client(Store.open(path, opts));
  }

  /**
   * Whether connecting to the Store at `path` writable would change nothing first: this process
   * may write the file and its directory, and the Store is of the current format (a writable
   * connection upgrades an older one). `layerfs workspace status` connects writable only then,
   * so that, like the SDK's status, it writes back the racy entries it confirmed.
   */
  static canWriteAsIs(path: string): boolean {
    return writableAsIs(path);
  }

  /** The Workspace's uncommitted changes as a git patch (its base state against its files). */
  async workspaceDiff(ref: string, opts: PatchRequest = {}): Promise<PatchResult> {
    return diffs.workspaceDiff(this.store, ref, await this.workspaceStatus(ref), opts);
  }

  // ---- Workspaces ----

  /**
   * Creates a Workspace of the Branch head at `at`: `materialize` writes the files there, `fuse`
   * mounts a live view served by the Store's daemon (started on demand), `auto` picks fuse when
   * this machine can mount. Default: `$LAYERFS_PROJECTION`, else materialize.
   */
  async createWorkspace(
    branch: string,
    opts: { at: string; projection?: 'materialize' | 'fuse' | 'auto'; backend?: 'kernel'; sandbox?: string; onProgress?: (p: ExportProgress) => void },
  ): Promise<WorkspaceInfo> {
    return workspaces.createWorkspace(this.ctx, branch, opts);
  }

  workspace(ref: string): WorkspaceInfo {
    return workspaces.workspaceInfoOf(this.store, resolveWorkspace(this.store, ref));
  }

  workspaces(opts: { branch?: string } = {}): WorkspaceInfo[] {
    return workspaces.workspaces(this.store, opts);
  }

  /** What changed in the Workspace, per path; a FUSE Workspace asks its daemon. */
  async workspaceStatus(ref: string): Promise<WorkspaceStatus> {
    return workspaces.workspaceStatus(this.store, ref);
  }

  /**
   * Commits the Workspace's changes: Created | UpToDate | Busy | HeadMoved. The message, metadata
   * and author (default: $LAYERFS_AUTHOR, else user@host) become part of the Commit and its id.
   * `exclude` (materialized Workspaces): gitignore patterns whose new paths stay out of this Commit.
   */
  async commitWorkspace(ref: string, opts: CommitOptions = {}): Promise<CommitResult> {
    return workspaces.commitWorkspace(this.ctx, ref, opts);
  }

  /** Ends a Workspace and removes its files (a FUSE one is unmounted). Never commits; a clean end refuses changes. */
  async endWorkspace(ref: string, opts: { discard?: boolean; onProgress?: (p: RemoveProgress) => void } = {}): Promise<EndResult> {
    return workspaces.endWorkspace(this.ctx, ref, opts);
  }

  /**
   * One tool call of an agent: `fn` gets a fresh Workspace of the Branch head (`ws.path`,
   * `ws.exec`); it is committed only when `fn` returns `{ keep: true, message, metadata }`, and
   * ended in every case (throw, abort, timeout) except a commit that could not publish, which
   * leaves it (`workspace` in the result). The result carries the diff of what the call changed.
   *
   * ```ts
   * const r = await client.toolCall('try-a', async (ws) => {
   *   const t = await ws.exec(['npm', 'test']);
   *   return { keep: t.exitCode === 0, message: 'run tests', metadata: { tool: 'bash', callId: 'c17' } };
   * });
   * ```
   */
  toolCall(branch: string, fn: (ws: ToolCallWorkspace) => Promise<ToolCallDecision> | ToolCallDecision, opts: ToolCallOptions = {}): Promise<ToolCallResult> {
    return runToolCall(this, this.store, branch, fn, opts);
  }

  /**
   * A Workspace of the Branch head owned by this process (under `<store>.d/tool-calls/` unless
   * `at`), for work spread over several requests; commit and end it as usual. If this process
   * dies, the next tool call (or `workspace end`) ends it with discard.
   */
  async openToolWorkspace(branch: string, opts: { projection?: 'materialize' | 'fuse' | 'auto'; at?: string } = {}): Promise<WorkspaceInfo> {
    return this.workspace(await openOwnedWorkspace(this, this.store, branch, opts));
  }

  /** Ends the standby Workspaces `toolCall({ standby: true })` keeps ready (call before close). */
  endStandbys(): Promise<void> {
    return endStandbys(this);
  }

  /**
   * Range edits of files in the Workspace, validated first and applied all or nothing: each
   * replaces `deleteLength` bytes at `start` with `replacement` (a Buffer, or `{ zero: n }`).
   */
  editWorkspaceFileRanges(ref: string, edits: RangeEdit[]): { files: number; edits: number; bytesWritten: number } {
    return editFileRanges(resolveWorkspace(this.store, ref), edits);
  }

  /** What the Workspace's last reconciling commit found overlapping (kept until it commits). */
  workspaceConflicts(ref: string): ConflictInfo[] {
    return conflictInfos(this.store, resolveWorkspace(this.store, ref).id);
  }

  /** Settles one conflict: the Branch head's version, the Workspace's base version (layer), or the working tree's. */
  resolveWorkspaceConflict(ref: string, conflict: number, how: 'branch' | 'layer' | 'working-tree'): ConflictInfo {
    return resolveConflictOf(this.store, resolveWorkspace(this.store, ref), conflict, how);
  }

  /** Moves a clean Workspace onto the Branch's current head (a dirty one commits first: that reconciles). */
  async updateWorkspace(ref: string): Promise<UpdateResult> {
    const t0 = performance.now();
    const a0 = this.store.meter.allocatedGrowth;
    const r = await updateWorkspaceOf(this.store, resolveWorkspace(this.store, ref), this.ctx.stateDir);
    return this.monitor.record({ ...this.ctx.receipt('workspace.update', r.outcome, t0, a0, null), ...r } as UpdateResult) as UpdateResult;
  }

  /** Runs a command in the Workspace in the foreground (stdio inherited); resolves with its end. */
  async exec(ref: string, argv: string[], opts: { env?: NodeJS.ProcessEnv } = {}): Promise<ExecutionInfo> {
    return workspaces.exec(this.ctx, ref, argv, opts);
  }

  /** Starts a command in the background; follow it with executionOutput(). */
  execDetached(ref: string, argv: string[], opts: { env?: NodeJS.ProcessEnv } = {}): ExecutionInfo {
    return workspaces.execDetached(this.ctx, ref, argv, opts);
  }

  /** An interactive shell in the Workspace on a PTY of its own (inside its Sandbox when it has one). */
  shell(ref: string, opts: ShellOptions = {}): ShellSession {
    return openShell(this.store, this.ctx.stateDir, ref, opts);
  }

  // ---- Sandboxes ----

  /** Creates a named Sandbox (limits, mounts, network) and its cgroup; ERR_SANDBOX_UNAVAILABLE when this machine cannot enforce it. */
  createSandbox(name: string, opts: CreateSandboxOptions = {}): SandboxState {
    return createSandbox(this.store, name, opts);
  }

  /** One Sandbox's state (profile, cgroup, current use, Workspaces), or every Sandbox's. */
  sandboxStatus(name?: string): SandboxState[] {
    return sandboxStatus(this.store, name);
  }

  /** Kills everything running in the Sandbox and removes its cgroup (the next execution makes it again). */
  stopSandbox(name: string): Promise<{ outcome: 'Stopped' | 'AlreadyStopped'; killed: number }> {
    return stopSandbox(this.store, name);
  }

  /** Stops the Sandbox and deletes it; ERR_BUSY while Workspaces run in it. */
  removeSandbox(name: string): Promise<{ outcome: 'Removed'; killed: number }> {
    return removeSandbox(this.store, name);
  }

  execution(id: string): ExecutionInfo {
    return getExecution(this.ctx.stateDir, id);
  }

  executions(opts: { workspace?: string } = {}): ExecutionInfo[] {
    const ws = opts.workspace !== undefined ? toHex(resolveWorkspace(this.store, opts.workspace).id) : undefined;
    return listExecutions(this.ctx.stateDir, ws);
  }

  executionOutput(id: string, opts: { follow?: boolean; write: (chunk: Buffer) => void; signal?: AbortSignal }): Promise<ExecutionInfo> {
    return readOutput(this.ctx.stateDir, id, opts);
  }

  stopExecution(id: string, opts: { graceMs?: number } = {}): Promise<{ outcome: 'Stopped' | 'AlreadyEnded'; info: ExecutionInfo }> {
    return stopExecution(this.ctx.stateDir, id, opts);
  }

  // ---- Monitor ----

  /** A summary of recent receipts (this Store's receipt journal, kept beside the Store). */
  monitorSnapshot(): MonitorSnapshot {
    return this.monitor.snapshot();
  }


  // ---- Mount daemon ----

  /** The Store's mount daemon (pid, mounts with pending counts, what its start recovered), or null when none runs. */
  daemonStatus(): Promise<DaemonStatus | null> {
    return daemonStatus(this.store.path);
  }

  /** Stops the daemon, unmounting every FUSE Workspace (they become lost); refuses (Dirty) with uncommitted changes unless discard. */
  stopDaemon(opts: { discard?: boolean } = {}): Promise<StopDaemonResult> {
    return stopDaemon(this.store.path, opts);
  }

  close(): void {
    closeDaemonConnection(this.store.path);
    this.store.close();
  }
}
