/**
 * The Client's reading and history half: the Store's states (LayerStacks, Layers, entries, file
 * content, exports), Branches and Commits, diffs and patches, the Store as a whole (backup,
 * verify, repack, dedup analysis), deletion and retention, and remotes. `Client` (client.ts)
 * adds Workspaces, tool calls, Sandboxes, executions and the mount daemon. Every method only
 * delegates to its area module; the shared context is context.ts.
 */
import { resolveBranch, type DiffPage } from '../history/index.js';
import { Monitor, type Receipt } from '../monitor/monitor.js';
import type { BackupProgress } from '../store/backup.js';
import type { ByteRange } from '../store/read-range.js';
import type { ExportProgress } from '../store/export.js';
import type { ImportProgress } from '../store/import/import.js';
import type { Store } from '../store/store.js';
import type { TarSource } from '../store/import/tar-extract.js';
import type { TarStats } from '../store/tar.js';
import type { VerifyProgress } from '../store/verify.js';
import type { ApplyOptions, ApplyResult } from './apply.js';
import { streamTar } from './archive.js';
import * as branches from './branches.js';
import { clientContext, type ClientContext } from './context.js';
import * as diffs from './diffs.js';
import type { ForkFrom } from './fork-source.js';
import { formatPatches, type FormatPatchOptions, type FormatPatchResult } from './format-patch.js';
import type { GrepOptions, GrepResult } from './grep.js';
import * as maintenance from './maintenance.js';
import type { FileStat, PatchRequest, PatchResult } from './patch.js';
import * as remotes from './remotes.js';
import type * as remoteTransfer from './remote-transfer.js';
import type { RestoreResult } from './restore.js';
import * as lifecycle from './retention.js';
import type { BranchDeleteResult, BranchRenameResult, DeletedInfo, GcProgress, GcReceipt, LayerStackDeleteResult, PinInfo, PinResult, RetentionInfo } from './retention-types.js';
import { checkpoint, checkpoints, rewind, type CheckpointInfo, type RewindResult } from './rewind.js';
import * as states from './states.js';
import type { InitLayerStackOptions, StateRef } from './states.js';
import type {
  AddResult,
  BackupReceipt,
  BranchInfo,
  CommitInfo,
  CommitOptions,
  DedupAnalysis,
  EntryInfo,
  ExportReceipt,
  InitReceipt,
  LayerInfo,
  LayerStackInfo,
  RepackProgress,
  RepackReceipt,
  StoreInfoResult,
  VerifyResult,
} from './types.js';

/** Push, fetch, clone, init and verify: loaded on first use (they load the PostgreSQL driver). */
export const transfers = (): Promise<typeof remoteTransfer> => import('./remote-transfer.js');

export class HistoryClient {
  readonly monitor: Monitor;

  protected readonly ctx: ClientContext;

  protected constructor(protected readonly store: Store) {
    this.monitor = new Monitor(`${store.path}.d/receipts.jsonl`);
    this.ctx = clientContext(store, this.monitor);
  }

  /** The root of a state. */
  protected root(ref: StateRef): Buffer {
    return states.stateRoot(this.ctx, ref);
  }

  get storePath(): string {
    return this.store.path;
  }

  info(): StoreInfoResult {
    return maintenance.info(this.store);
  }

  async initLayerStack(opts: InitLayerStackOptions): Promise<InitReceipt> {
    return states.initLayerStack(this.ctx, opts);
  }

  layerStacks(): LayerStackInfo[] {
    return states.layerStacks(this.ctx);
  }

  layers(opts: { layerStack?: string } = {}): LayerInfo[] {
    return states.layers(this.ctx, opts);
  }

  layer(ref: StateRef): LayerInfo {
    return states.layer(this.ctx, ref);
  }

  /** Lists a directory of a state (or describes a single non-directory entry). */
  ls(ref: StateRef, path?: string | Buffer): EntryInfo[] {
    return states.ls(this.ctx, ref, path);
  }

  /** Describes one entry of a state. */
  stat(ref: StateRef, path?: string | Buffer): EntryInfo {
    return states.stat(this.ctx, ref, path);
  }

  /**
   * The content of a regular file of a state, piece by piece (bounded memory for large files).
   * With `{ offset, length }`, only that byte range (clamped to the file; past its end reads
   * nothing), loading only the chunks that overlap it.
   */
  *readFile(ref: StateRef, path: string | Buffer, range?: ByteRange): Generator<Buffer> {
    yield* states.readFile(this.ctx, ref, path, range);
  }

  cat(ref: StateRef, path: string | Buffer, range?: ByteRange): Buffer {
    return Buffer.concat([...this.readFile(ref, path, range)]);
  }

  /** Writes a state into a new (or empty) directory. */
  export(ref: StateRef, target: string, opts: { onProgress?: (p: ExportProgress) => void } = {}): ExportReceipt {
    return states.exportState(this.ctx, ref, target, opts);
  }

  /**
   * Streams a state as a deterministic pax tar (the same state gives the same bytes): `sink`
   * gets pieces of about 64 KiB in order and may return a promise to apply backpressure.
   */
  exportTar(ref: StateRef, sink: (piece: Buffer) => void | Promise<void>): Promise<TarStats & { ms: number }> {
    return streamTar(this.store.read(() => this.store.view(this.root(ref))), sink);
  }

  /**
   * Creates a LayerStack whose genesis Layer is the content of a tar stream (ustar, pax or
   * GNU): extracted beside the Store as `tar -xp --xattrs` would, imported, then removed, so
   * the root id equals that of importing the extracted directory.
   */
  async initLayerStackFromTar(opts: { name: string; tar: TarSource; onProgress?: (p: ImportProgress) => void }): Promise<InitReceipt> {
    return states.initLayerStackFromTar(this.ctx, opts);
  }

  /**
   * A consistent online copy of the Store at a new path (SQLite's backup API), while other
   * processes go on reading and committing: the copy is verified (every state re-hashed)
   * before it is put in place; a copy that fails verification is removed (ERR_CORRUPT).
   */
  async backup(dest: string, opts: { onProgress?: (p: BackupProgress) => void } = {}): Promise<BackupReceipt> {
    return maintenance.backup(this.ctx, dest, opts);
  }

  /** Re-reads and re-hashes everything reachable from every state. */
  verify(opts: { onProgress?: (p: VerifyProgress) => void } = {}): VerifyResult {
    return maintenance.verify(this.store, opts);
  }

  /**
   * Rewrites the Store's physical form for size, like `git gc --aggressive`: every pack row is
   * re-encoded at zstd `level` (default 19) in larger groups, in bounded transactions (a crash
   * leaves each object in its old or its new form), then the file is VACUUMed. Ids, content and
   * history never change; other connections may go on reading and writing meanwhile. Rows an
   * earlier repack wrote, at this level or higher, are skipped unless `full`.
   *
   * ```ts
   * const r = await client.repack({ onProgress: (p) => console.log(p.rowsDone, '/', p.rowsTotal) });
   * console.log(`${r.fileBytesBefore} -> ${r.fileBytesAfter} bytes in ${Math.round(r.ms)} ms`);
   * ```
   */
  async repack(opts: { level?: number; full?: boolean; onProgress?: (p: RepackProgress) => void } = {}): Promise<RepackReceipt> {
    return maintenance.repack(this.ctx, opts);
  }

  // ---- Branches and Commits ----

  /**
   * Forks a Branch from a Layer, from a Commit in another Branch's history (`commit` may be a
   * checkpoint name, whose Branch is implied), or from any state reference (`from`). Copies no data.
   */
  forkBranch(opts: ForkFrom): BranchInfo {
    return branches.forkBranch(this.ctx, opts);
  }

  branch(ref: string): BranchInfo {
    return this.store.read(() => branches.branchInfoOf(this.store, resolveBranch(this.store, ref)));
  }

  branches(opts: { layerStack?: string } = {}): BranchInfo[] {
    return branches.branches(this.store, opts);
  }

  /**
   * A Branch's Commits, newest first; with `path`, only those that changed something at or below
   * it. `pruned` marks those retention no longer keeps (db gc may reclaim their state).
   */
  log(branch: string, opts: { limit?: number; path?: string } = {}): CommitInfo[] {
    return branches.log(this.store, branch, opts);
  }

  /** Commits of one Branch (newest first), or of every Branch; `pruned` as in log(). */
  commits(opts: { branch?: string } = {}): CommitInfo[] {
    return branches.commits(this.store, opts);
  }

  /**
   * Publishes a Branch head as the next Layer of its LayerStack. If the LayerStack moved on since
   * the Branch forked, the Branch's changes are reconciled with its head (unless strict or an
   * expected head is given: HeadMoved); a Conflicted add creates a resolution Workspace (at
   * `resolveAt`, default beside the Store) and answers its id.
   */
  add(branch: string, opts: { expectedHead?: string; strict?: boolean; resolveAt?: string } = {}): AddResult {
    return branches.add(this.ctx, branch, opts);
  }

  /**
   * Publishes a new Commit whose tree equals an older state's: a checkpoint name, a Commit of the
   * Branch's history, or its base Layer. The head never moves backwards, so everything made since
   * stays in the log. UpToDate when the Branch already shows that tree.
   *
   * ```ts
   * const r = client.rewind('try-a', 'before-refactor', { message: 'undo the refactor' });
   * ```
   */
  rewind(branch: string, to: string, opts: CommitOptions = {}): RewindResult {
    return this.monitor.record(rewind(this.store, branch, to, opts)) as RewindResult;
  }

  /** Pins the Branch's current state under a name (unique per Branch), for `rewind` and `diff`. */
  checkpoint(branch: string, name: string): CheckpointInfo {
    return checkpoint(this.store, branch, name);
  }

  checkpoints(branch: string): CheckpointInfo[] {
    return checkpoints(this.store, branch);
  }

  // ---- Diff ----

  /** Differences between two states (any StateRef), paged. */
  diff(from: StateRef, to: StateRef, opts: { after?: string; limit?: number } = {}): DiffPage {
    return diffs.diff(this.store, from, to, opts);
  }

  /**
   * A git patch from one state to another (`git apply` accepts it): binary files summarised
   * unless `binary`, text decided as git does unless `text`; only under `paths` when given.
   */
  diffPatch(from: StateRef, to: StateRef, opts: PatchRequest = {}): PatchResult {
    return diffs.diffPatch(this.store, from, to, opts);
  }

  /**
   * Brings a state's changes (from `from`, default its fork base) into an existing directory
   * or git work tree: checks every path first and writes nothing on a conflict (outcome
   * Conflicts), then writes each file atomically. Refuses a dirty git work tree unless `force`.
   */
  apply(ref: StateRef, dir: string, opts: ApplyOptions & { from?: StateRef } = {}): ApplyResult {
    return diffs.apply(this.store, ref, dir, opts);
  }

  /**
   * One git mbox patch per Commit of a Branch (after `since`), written to `outDir` as
   * 0001-subject.patch…; `git am` applies them with each Commit's message, author and time.
   */
  formatPatch(branch: string, outDir: string, opts: FormatPatchOptions = {}): FormatPatchResult {
    return this.store.read(() => formatPatches(this.store, branch, outDir, opts));
  }

  /**
   * Takes paths back from any state into a Workspace (like `git restore --source`): each
   * subtree becomes the source's exactly; a path the source lacks is removed.
   */
  restore(ref: string, opts: { source: StateRef; paths: string[] }): RestoreResult {
    return diffs.restore(this.store, ref, opts);
  }

  /** Searches a state's files for a pattern (a JavaScript regular expression, or fixed), like `git grep -n`. */
  grep(pattern: string, ref: StateRef, opts: GrepOptions = {}): GrepResult {
    return diffs.grep(this.store, pattern, ref, opts);
  }

  /**
   * diffPatch one file section at a time, for patches too large to hold: `skipped` (FIFOs and
   * devices) is filled before the first section is yielded.
   */
  *diffPatchSections(from: StateRef, to: StateRef, opts: PatchRequest & { skipped?: string[] } = {}): Generator<{ text: Buffer; stat: FileStat }> {
    yield* diffs.diffPatchSections(this.store, from, to, opts);
  }


  // ---- Store analysis ----

  /**
   * Traverses every state (or those of one LayerStack and its Branches): logical bytes of each,
   * the canonical bytes each added, Store-wide unique, stored and allocated bytes, the dedup
   * ratio, and the largest contributors.
   */
  analyzeDedup(opts: { layerStack?: string; top?: number } = {}): DedupAnalysis {
    return maintenance.analyzeDedup(this.store, opts);
  }

  // ---- Deletion, retention and gc (retention.ts) ----

  private get lifecycle(): lifecycle.RetentionContext {
    return branches.retentionContext(this.ctx);
  }

  /**
   * Deletes a Branch (a tombstone records when): refuses (ERR_BUSY) while Workspaces are open on
   * it; `force` ends clean ones first, and answers Dirty for one with uncommitted changes unless
   * `discard`. Its Commits stay until `gc` reclaims what nothing else keeps.
   */
  deleteBranch(ref: string, opts: { force?: boolean; discard?: boolean } = {}): Promise<BranchDeleteResult> {
    return lifecycle.deleteBranch(this.lifecycle, ref, opts);
  }

  /** Renames a Branch (unique within its LayerStack); its id, Commits and Workspaces stay. */
  renameBranch(ref: string, name: string): BranchRenameResult {
    return lifecycle.renameBranchOp(this.lifecycle, ref, name);
  }

  /** Deletes a LayerStack with its Layers, Branches and Commits; refuses (ERR_BUSY) while Workspaces are open on it. */
  deleteLayerStack(ref: string): LayerStackDeleteResult {
    return lifecycle.deleteLayerStack(this.lifecycle, ref);
  }

  /** Deleted Branches and LayerStacks (their tombstones), oldest first. */
  deleted(): DeletedInfo[] {
    return this.store.read(() => lifecycle.deleted(this.store));
  }

  /** Keeps a state (a Layer, a Commit, a Branch's current state) whatever the retention policy. */
  pin(ref: StateRef): PinResult {
    return lifecycle.pin(this.lifecycle, ref);
  }

  unpin(ref: StateRef): PinResult {
    return lifecycle.unpin(this.lifecycle, ref);
  }

  pins(): PinInfo[] {
    return lifecycle.pins(this.store);
  }

  retention(): RetentionInfo {
    return lifecycle.retention(this.store);
  }

  /** Sets the retention policy; an omitted rule stays as it is, null clears it. */
  setRetention(p: { branchCommits?: number | null; olderThanMs?: number | null }): RetentionInfo & Receipt {
    return lifecycle.setRetention(this.lifecycle, p);
  }

  /**
   * Deletes every object no kept state reaches (Layers, Branch heads and the Commits retention
   * keeps, pins, open Workspaces), in bounded transactions, while other processes go on
   * reading and writing; `dryRun` reports what it would free. `vacuum` returns the freed pages to
   * the file system.
   */
  gc(opts: { dryRun?: boolean; vacuum?: boolean; batchObjects?: number; onProgress?: (p: GcProgress) => void } = {}): Promise<GcReceipt> {
    return lifecycle.gc(this.lifecycle, opts);
  }

  // ---- Remotes (remotes.ts; transfers in remote-transfer.ts, loaded on first use) ----

  /** Records a remote (a postgres:// URL without password, or "env:" for the PG* variables). */
  remoteAdd(name: string, url: string): remotes.RemoteInfo {
    return remotes.remoteAdd(this.store, name, url);
  }

  remotes(): remotes.RemoteInfo[] {
    return remotes.remoteList(this.store);
  }

  remoteRemove(name: string): void {
    remotes.remoteRemove(this.store, name);
  }

  /** The remote heads seen at the last fetch or push, readable as REMOTE/NAME. */
  remoteRefs(remote?: string): remotes.RemoteRefInfo[] {
    return remotes.remoteRefList(this.store, remote);
  }

  /** Creates or upgrades the remote's schema. */
  async remoteInit(remote?: string, opts: remotes.RemoteOptions = {}): Promise<{ remote: string; from: number | null; to: number }> {
    return (await transfers()).remoteInit(this.store, remote, opts);
  }

  /** Re-hashes everything the remote's states reach (storing nothing); `ok: false` names the first damage. */
  async remoteVerify(remote?: string, opts: remotes.RemoteOptions = {}): Promise<remotes.RemoteVerifyReport> {
    return (await transfers()).remoteVerify(this.store, remote, opts);
  }

  /** Sends a LayerStack or a Branch; the remote head moves by compare-and-swap (ERR_HEAD_MOVED). */
  async push(ref: string, opts: remotes.RemoteOptions & { remote?: string } = {}): Promise<remotes.PushResult> {
    return (await transfers()).push(this.store, opts.remote, ref, opts);
  }

  /** Fetches objects and heads of a remote; its states become readable as REMOTE/NAME. */
  async fetch(remote?: string, opts: remotes.RemoteOptions & { layerStack?: string } = {}): Promise<remotes.FetchResult> {
    return (await transfers()).fetch(this.store, remote, opts);
  }
}
