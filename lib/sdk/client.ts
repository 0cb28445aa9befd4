/**
 * Client: the public API. One Client binds one Store and one Monitor. Every mutating operation
 * returns a typed receipt; failures are LayerFsError with a stable `code`.
 */
import { statSync } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import {
  addBranch,
  branchLog,
  branchRoot,
  forkBranch,
  getBranch,
  listBranches,
  resolveBranch,
  resolveCommit,
  diffStates,
  type BranchRow,
  type DiffPage,
  type ForkSource,
  getLayerStack,
  initLayerStack,
  listLayers,
  listLayerStacks,
  resolveLayer,
  resolveLayerStack,
  normalizeNote,
  touchesPath,
  getLayer,
  type CommitRow,
  type LayerRow,
  keptCommits,
  keptStates,
} from '../history/index.js';
import { Monitor, type MonitorSnapshot, type Receipt } from '../monitor/receipt.js';
import { analyzeDedup, exportTree, InodeKind, readRange, Store, verifyStore, type BackupProgress, type ByteRange, type ExportProgress, type ImportProgress, type TarSource, type TarStats, type VerifyProgress, type WriteStats } from '../store/index.js';
import { branchInfo, commitInfo, entryInfo, layerInfo, layerStackInfo, workspaceInfo } from './convert.js';
import {
  chooseProjection,
  createResolutionWorkspace,
  editFileRanges,
  getExecution,
  projectionOf,
  workspaceStates,
  type WorkspaceState,
  listExecutions,
  listWorkspaces,
  readOutput,
  recordEnded,
  resolveWorkspace,
  runExecution,
  startDetached,
  stopExecution,
  type ExecutionInfo,
  type RemoveProgress,
  type RangeEdit,
  type WorkspaceRow,
} from '../workspace/index.js';
import { closeDaemonConnection, daemonStatus, stopDaemon } from '../mount/index.js';
import { defaultAuthor } from './author.js';
import { endStandbys } from './standby.js';
import { checkpoint, checkpoints, rewind, type CheckpointInfo, type RewindResult } from './rewind.js';
import { endPolicy, openOwnedWorkspace, runToolCall, type ToolCallDecision, type ToolCallOptions, type ToolCallResult, type ToolCallWorkspace } from './tool-call.js';
import { splitStatePath } from './paths.js';
import { attachWorkspace, checkSandbox, createSandbox, execOutcome, openShell, planFor, removeSandbox, sandboxNameOf, sandboxStatus, stopSandbox, type CreateSandboxOptions, type ShellOptions } from './sandbox.js';
import type { SandboxState, ShellSession } from '../workspace/index.js';
import * as remotes from './remotes.js';
import { forkBase, resolveState, type ResolvedState } from './refs.js';
import { applyState, type ApplyOptions, type ApplyResult } from './apply.js';
import { streamTar, verifiedBackup, withExtractedTar } from './archive.js';
import { grepState, type GrepOptions, type GrepResult } from './grep.js';
import { restorePaths, type RestoreResult } from './restore.js';
import { formatPatches, type FormatPatchOptions, type FormatPatchResult } from './format-patch.js';
import { formatPairs, patchSections, pathFilters, statePairs, workspacePairs, type FileStat, type PatchRequest, type PatchResult } from './patch.js';
import * as lifecycle from './retention.js';
import type { BranchDeleteResult, BranchRenameResult, DeletedInfo, GcProgress, GcReceipt, LayerStackDeleteResult, PinInfo, PinResult, RetentionInfo } from './retention-types.js';
import { conflictInfos, resolveConflictOf, updateWorkspaceOf, withReconcilePhase } from './reconcile.js';
import type {
  ConflictInfo,
  UpdateResult,
  AddResult,
  BackupReceipt,
  DedupAnalysis,
  BranchInfo,
  CommitInfo,
  CommitOptions,
  CommitResult,
  DaemonStatus,
  EndResult,
  EntryInfo,
  ExportReceipt,
  RepackProgress,
  RepackReceipt,
  InitReceipt,
  LayerInfo,
  LayerStackInfo,
  StopDaemonResult,
  StoreInfoResult,
  VerifyResult,
  WorkspaceInfo,
  WorkspaceStatus,
} from './types.js';

export interface InitLayerStackOptions {
  name: string;
  /** Directory to import as the genesis Layer; omit (or pass `empty: true`) for an empty one. */
  source?: string;
  empty?: boolean;
  /**
   * gitignore patterns to leave out (`['node_modules/', '*.log']`), after those of the source's
   * `.layerfsignore`. The Store's own files are always left out.
   */
  exclude?: string[];
  onProgress?: (p: ImportProgress) => void;
}

/**
 * A state reference: a Layer or Commit id (or unambiguous prefix), a Branch name or id (its
 * current state), or a LayerStack name (its head Layer).
 */
export type StateRef = string;


export class Client {
  readonly monitor: Monitor;

  private constructor(private readonly store: Store) {
    this.monitor = new Monitor(`${store.path}.d/receipts.jsonl`);
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
    const { store, result } = await remotes.clone(url, path, opts);
    return { client: new Client(store), result };
  }

  /** Connects to an existing Store, checking that it is a Store of a supported format. */
  static connect(path: string, opts: { readonly?: boolean } = {}): Client {
    return new Client(Store.open(path, opts));
  }

  get storePath(): string {
    return this.store.path;
  }

  info(): StoreInfoResult {
    const c = this.store.counts();
    let fileBytes = 0;
    for (const f of [this.store.path, `${this.store.path}-wal`]) {
      try {
        fileBytes += statSync(f).size;
      } catch {
        /* no WAL right now */
      }
    }
    return {
      path: this.store.path,
      formatVersion: this.store.info.formatVersion,
      storeId: this.store.info.storeId,
      createdAt: new Date(this.store.info.createdMs).toISOString(),
      layerStacks: c.layerStacks,
      layers: c.layers,
      objects: c.objects,
      fileBytes,
    };
  }

  /**
   * `allocated0` is `store.meter.allocatedGrowth` before the operation: allocated growth is
   * summed over this handle's own write transactions, each measured under its write lock.
   * Given `phases` (walkRead, chunkHash, write), publish is the rest of the wall time, so the
   * four phases add up to `ms`.
   */
  private receipt(operation: string, outcome: string, t0: number, allocated0: number, w: WriteStats | null, phases?: { walkRead: number; chunkHash: number; write: number }): Receipt {
    const s = w ?? { objectsInserted: 0, objectsReused: 0, bytesInserted: 0, bytesReused: 0 };
    const ms = performance.now() - t0;
    return {
      operation,
      outcome,
      ms,
      phases: phases ? { ...phases, publish: Math.max(0, ms - phases.walkRead - phases.chunkHash - phases.write) } : {},
      ...s,
      semanticGrowth: s.bytesInserted,
      allocatedGrowth: this.store.meter.allocatedGrowth - allocated0,
    };
  }

  async initLayerStack(opts: InitLayerStackOptions): Promise<InitReceipt> {
    if (opts.source !== undefined && opts.empty) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give either a source directory or empty, not both');
    if (opts.source === undefined && opts.empty === false) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give a source directory, or empty: true');
    const t0 = performance.now();
    const a0 = this.store.meter.allocatedGrowth;
    const r = await initLayerStack(this.store, { name: opts.name, source: opts.source, exclude: opts.exclude, onProgress: opts.onProgress });
    const im = r.import;
    const base = this.receipt('layerstack.init', 'Created', t0, a0, r.write, im ? im.phases : { walkRead: 0, chunkHash: 0, write: 0 });
    return this.monitor.record({
      ...base,
      outcome: 'Created',
      layerStack: layerStackInfo(r.layerStack),
      layer: layerInfo(r.layer, r.layerStack.name),
      files: im?.files ?? 0,
      directories: im ? im.directories : 1, // the root counts once: the import counts it as a directory it walked
      symlinks: im?.symlinks ?? 0,
      specials: im?.specials ?? 0,
      hardLinks: im?.hardLinks ?? 0,
      bytes: im?.bytes ?? 0,
      skipped: im?.skipped ?? [],
    } as InitReceipt) as InitReceipt;
  }

  layerStacks(): LayerStackInfo[] {
    return listLayerStacks(this.store).map(layerStackInfo);
  }

  layers(opts: { layerStack?: string } = {}): LayerInfo[] {
    return this.store.read(() => {
      const names = new Map(listLayerStacks(this.store).map((s) => [toHex(s.id), s.name]));
      const stackId = opts.layerStack !== undefined ? resolveLayerStack(this.store, opts.layerStack).id : undefined;
      return listLayers(this.store, stackId).map((l) => layerInfo(l, names.get(toHex(l.layerStackId)) ?? ''));
    });
  }

  private layerRow(ref: string): LayerRow {
    const l = resolveLayer(this.store, ref);
    if (!l) throw new LayerFsError('ERR_NOT_FOUND', `no Layer or LayerStack matches ${JSON.stringify(ref)}`, { id: ref, hint: 'list Layers with `layerfs query layers`' });
    return l;
  }

  layer(ref: StateRef): LayerInfo {
    const l = this.layerRow(ref);
    return layerInfo(l, getLayerStack(this.store, l.layerStackId)?.name ?? '');
  }

  private state(ref: StateRef): ResolvedState {
    return resolveState(this.store, ref);
  }

  /** Lists a directory of a state (or describes a single non-directory entry). */
  ls(ref: StateRef, path?: string | Buffer): EntryInfo[] {
    return this.store.read(() => {
      const view = this.store.view(this.state(ref).rootId);
      const parts = splitStatePath(path);
      const { serial, inode } = view.resolve(parts, String(path ?? ''));
      if (inode.kind !== InodeKind.Dir) return [entryInfo(parts[parts.length - 1] ?? Buffer.alloc(0), serial, inode)];
      const out: EntryInfo[] = [];
      for (const e of view.readdir(inode)) out.push(entryInfo(e.name, e.serial, view.inode(e.serial)));
      return out;
    });
  }

  /** Describes one entry of a state. */
  stat(ref: StateRef, path?: string | Buffer): EntryInfo {
    return this.store.read(() => {
      const view = this.store.view(this.state(ref).rootId);
      const parts = splitStatePath(path);
      const { serial, inode } = view.resolve(parts, String(path ?? ''));
      return entryInfo(parts[parts.length - 1] ?? Buffer.alloc(0), serial, inode);
    });
  }

  /**
   * The content of a regular file of a state, piece by piece (bounded memory for large files).
   * With `{ offset, length }`, only that byte range (clamped to the file; past its end reads
   * nothing), loading only the chunks that overlap it.
   */
  *readFile(ref: StateRef, path: string | Buffer, range?: ByteRange): Generator<Buffer> {
    const view = this.store.view(this.state(ref).rootId);
    const display = String(path);
    const { inode } = view.resolve(splitStatePath(path), display);
    if (inode.kind !== InodeKind.File) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${display} is not a regular file`, { path: display });
    if (range === undefined) yield* view.content(inode);
    else yield* readRange(this.store.objects, inode, range);
  }

  cat(ref: StateRef, path: string | Buffer, range?: ByteRange): Buffer {
    return Buffer.concat([...this.readFile(ref, path, range)]);
  }

  /** Writes a state into a new (or empty) directory. */
  export(ref: StateRef, target: string, opts: { onProgress?: (p: ExportProgress) => void } = {}): ExportReceipt {
    const t0 = performance.now();
    const s = this.store.read(() => exportTree(this.store.view(this.state(ref).rootId), target, { onProgress: opts.onProgress }));
    const base = this.receipt('export', 'Exported', t0, this.store.meter.allocatedGrowth, null);
    return this.monitor.record({ ...base, outcome: 'Exported', target, ...s } as ExportReceipt) as ExportReceipt;
  }

  /**
   * Streams a state as a deterministic pax tar (the same state gives the same bytes): `sink`
   * gets pieces of about 64 KiB in order and may return a promise to apply backpressure.
   */
  exportTar(ref: StateRef, sink: (piece: Buffer) => void | Promise<void>): Promise<TarStats & { ms: number }> {
    return streamTar(this.store.read(() => this.store.view(this.state(ref).rootId)), sink);
  }

  /**
   * Creates a LayerStack whose genesis Layer is the content of a tar stream (ustar, pax or
   * GNU): extracted beside the Store as `tar -xp --xattrs` would, imported, then removed, so
   * the root id equals that of importing the extracted directory.
   */
  async initLayerStackFromTar(opts: { name: string; tar: TarSource; onProgress?: (p: ImportProgress) => void }): Promise<InitReceipt> {
    if (this.layerStacks().some((s) => s.name === opts.name)) throw new LayerFsError('ERR_NAME_TAKEN', `a LayerStack named ${opts.name} already exists`, { name: opts.name, hint: 'choose another name' });
    return withExtractedTar(this.store, opts.tar, (dir) => this.initLayerStack({ name: opts.name, source: dir, onProgress: opts.onProgress }));
  }

  /**
   * A consistent online copy of the Store at a new path (SQLite's backup API), while other
   * processes go on reading and committing: the copy is verified (every state re-hashed)
   * before it is put in place; a copy that fails verification is removed (ERR_CORRUPT).
   */
  async backup(dest: string, opts: { onProgress?: (p: BackupProgress) => void } = {}): Promise<BackupReceipt> {
    const t0 = performance.now();
    const verify = (path: string): VerifyResult => {
      const c = Client.connect(path, { readonly: true });
      try {
        return c.verify();
      } finally {
        c.close();
      }
    };
    const r = await verifiedBackup(this.store, dest, verify, opts.onProgress);
    const base = this.receipt('db.backup', 'BackedUp', t0, this.store.meter.allocatedGrowth, null);
    const { verify: v, ...rest } = r;
    return this.monitor.record({ ...base, outcome: 'BackedUp', ...rest, states: v.states, objectsChecked: v.objectsChecked } as BackupReceipt) as BackupReceipt;
  }

  /** Re-reads and re-hashes everything reachable from every state. */
  verify(opts: { onProgress?: (p: VerifyProgress) => void } = {}): VerifyResult {
    return this.store.read(() => {
      // The states retention keeps: Commits it no longer keeps (pruned, or of deleted
      // Branches) may have been reclaimed by db gc.
      const r = verifyStore(this.store, keptStates(this.store), opts.onProgress);
      return { ...r };
    });
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
    const t0 = performance.now();
    const a0 = this.store.meter.allocatedGrowth;
    const r = await this.store.repack({ level: opts.level, full: opts.full, onProgress: opts.onProgress });
    const base = this.receipt('db.repack', 'Repacked', t0, a0, null);
    return this.monitor.record({
      ...base,
      outcome: 'Repacked',
      allocatedGrowth: r.fileBytesAfter - r.fileBytesBefore,
      level: r.level,
      rowsBefore: r.rowsBefore,
      rowsAfter: r.rowsAfter,
      rowsSkipped: r.rowsSkipped,
      objects: r.objects,
      storedBytesBefore: r.storedBytesBefore,
      storedBytesAfter: r.storedBytesAfter,
      fileBytesBefore: r.fileBytesBefore,
      fileBytesAfter: r.fileBytesAfter,
      transactions: r.transactions,
      rewriteMs: r.rewriteMs,
      vacuumMs: r.vacuumMs,
    } as RepackReceipt) as RepackReceipt;
  }

  // ---- Branches and Commits ----

  private branchInfoOf(b: BranchRow): BranchInfo {
    return branchInfo(b, getLayerStack(this.store, b.layerStackId)?.name ?? '', branchRoot(this.store, b));
  }

  /** Forks a Branch from a Layer, or from a Commit in another Branch's history. Copies no data. */
  forkBranch(opts: { name: string; layer: StateRef } | { name: string; branch: string; commit: string }): BranchInfo {
    const t0 = performance.now();
    let source: ForkSource;
    if ('layer' in opts) source = { layer: this.layerRow(opts.layer).id };
    else {
      const branch = resolveBranch(this.store, opts.branch);
      const commit = resolveCommit(this.store, opts.commit);
      if (!commit) throw new LayerFsError('ERR_NOT_FOUND', `no Commit ${JSON.stringify(opts.commit)}`, { id: opts.commit, hint: 'see `layerfs log BRANCH`' });
      source = { branch, commit: commit.id };
    }
    const a0 = this.store.meter.allocatedGrowth;
    const b = forkBranch(this.store, opts.name, source);
    this.monitor.record(this.receipt('branch.fork', 'Created', t0, a0, null));
    return this.branchInfoOf(b);
  }

  branch(ref: string): BranchInfo {
    return this.store.read(() => this.branchInfoOf(resolveBranch(this.store, ref)));
  }

  branches(opts: { layerStack?: string } = {}): BranchInfo[] {
    return this.store.read(() => {
      const stackId = opts.layerStack !== undefined ? resolveLayerStack(this.store, opts.layerStack).id : undefined;
      return listBranches(this.store, stackId).map((b) => this.branchInfoOf(b));
    });
  }

  /**
   * A Branch's Commits, newest first; with `path`, only those that changed something at or below
   * it. `pruned` marks those retention no longer keeps (db gc may reclaim their state).
   */
  log(branch: string, opts: { limit?: number; path?: string } = {}): CommitInfo[] {
    return this.store.read(() => {
      const kept = keptCommits(this.store);
      const info = (c: CommitRow): CommitInfo => ({ ...commitInfo(c), pruned: !kept.has(toHex(c.id)) });
      const b = resolveBranch(this.store, branch);
      if (opts.path === undefined) return branchLog(this.store, b, opts.limit).map(info);
      const path = opts.path;
      const all = branchLog(this.store, b);
      const baseRoot = (c: (typeof all)[number]): Buffer => (c.parentCommitId ? all.find((p) => p.id.equals(c.parentCommitId!))?.rootId : undefined) ?? getLayer(this.store, c.baseLayerId)!.rootId;
      const out: CommitInfo[] = [];
      for (const c of all) {
        if (out.length >= (opts.limit ?? Number.MAX_SAFE_INTEGER)) break;
        if (touchesPath(this.store, baseRoot(c), c.rootId, path)) out.push(info(c));
      }
      return out;
    });
  }

  /** Commits of one Branch (newest first), or of every Branch; `pruned` as in log(). */
  commits(opts: { branch?: string } = {}): CommitInfo[] {
    if (opts.branch !== undefined) return this.log(opts.branch);
    return this.store.read(() => {
      const seen = new Map<string, CommitInfo>();
      const kept = keptCommits(this.store);
      for (const b of listBranches(this.store)) for (const c of branchLog(this.store, b)) seen.set(toHex(c.id), { ...commitInfo(c), pruned: !kept.has(toHex(c.id)) });
      return [...seen.values()].sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
    });
  }

  /**
   * Publishes a Branch head as the next Layer of its LayerStack. If the LayerStack moved on since
   * the Branch forked, the Branch's changes are reconciled with its head (unless strict or an
   * expected head is given: HeadMoved); a Conflicted add creates a resolution Workspace (at
   * `resolveAt`, default beside the Store) and answers its id.
   */
  add(branch: string, opts: { expectedHead?: string; strict?: boolean; resolveAt?: string } = {}): AddResult {
    const t0 = performance.now();
    const a0 = this.store.meter.allocatedGrowth;
    const b = resolveBranch(this.store, branch);
    const expected = opts.expectedHead !== undefined ? this.layerRow(opts.expectedHead).id : undefined;
    const r = addBranch(this.store, b.id, { expectedHead: expected, strict: opts.strict });
    const base = this.receipt('layerstack.add', r.outcome, t0, a0, null);
    const stack = getLayerStack(this.store, b.layerStackId)?.name ?? '';
    let out: AddResult;
    switch (r.outcome) {
      case 'Added':
        out = { ...base, outcome: 'Added', layer: layerInfo(r.layer, stack), previousHead: toHex(r.previousHead), ...(r.reconciled ? { reconciled: { ...r.reconciled, retries: 0 } } : {}) };
        withReconcilePhase(out, r.reconciled?.ms);
        break;
      case 'Conflicted': {
        const ws = createResolutionWorkspace(this.store, b, r, opts.resolveAt);
        out = { ...base, outcome: 'Conflicted', head: toHex(r.head), conflicts: conflictInfos(this.store, ws.id), resolutionWorkspace: this.workspaceInfoOf(ws) };
        break;
      }
      case 'UpToDate':
        out = { ...base, outcome: 'UpToDate', layer: layerInfo(r.layer, stack) };
        break;
      case 'NoChanges':
        out = { ...base, outcome: 'NoChanges', head: toHex(r.head) };
        break;
      default:
        out = { ...base, outcome: 'HeadMoved', expected: toHex(r.expected), actual: toHex(r.actual) };
    }
    return this.monitor.record(out) as AddResult;
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
    return this.store.read(() => diffStates(this.store, this.state(from).rootId, this.state(to).rootId, opts));
  }

  /**
   * A git patch from one state to another (`git apply` accepts it): binary files summarised
   * unless `binary`, text decided as git does unless `text`; only under `paths` when given.
   */
  diffPatch(from: StateRef, to: StateRef, opts: PatchRequest = {}): PatchResult {
    return this.store.read(() => {
      const skipped: string[] = [];
      const pairs = statePairs(this.store, this.state(from).rootId, this.state(to).rootId, pathFilters(opts.paths), skipped);
      return formatPairs(pairs, opts, skipped);
    });
  }

  /**
   * Brings a state's changes (from `from`, default its fork base) into an existing directory
   * or git work tree: checks every path first and writes nothing on a conflict (outcome
   * Conflicts), then writes each file atomically. Refuses a dirty git work tree unless `force`.
   */
  apply(ref: StateRef, dir: string, opts: ApplyOptions & { from?: StateRef } = {}): ApplyResult {
    const { base, state } = this.store.read(() => {
      const state = this.state(ref);
      const base = opts.from !== undefined ? this.state(opts.from) : forkBase(this.store, state);
      if (!base) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${ref} is the first Layer of its LayerStack and has no base`, { id: ref, hint: 'give --from STATE, or use `layerfs export`' });
      return { base, state };
    });
    return applyState(this.store, base.rootId, state.rootId, dir, opts);
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
    const w = resolveWorkspace(this.store, ref);
    return this.store.read(() => restorePaths(this.store, this.state(opts.source).rootId, w.path, opts.paths));
  }

  /** Searches a state's files for a pattern (a JavaScript regular expression, or fixed), like `git grep -n`. */
  grep(pattern: string, ref: StateRef, opts: GrepOptions = {}): GrepResult {
    return this.store.read(() => grepState(this.store.view(this.state(ref).rootId), pattern, opts));
  }

  /**
   * diffPatch one file section at a time, for patches too large to hold: `skipped` (FIFOs and
   * devices) is filled before the first section is yielded.
   */
  *diffPatchSections(from: StateRef, to: StateRef, opts: PatchRequest & { skipped?: string[] } = {}): Generator<{ text: Buffer; stat: FileStat }> {
    const skipped = opts.skipped ?? [];
    const pairs = this.store.read(() => statePairs(this.store, this.state(from).rootId, this.state(to).rootId, pathFilters(opts.paths), skipped));
    yield* patchSections(pairs, opts);
  }

  /** The Workspace's uncommitted changes as a git patch (its base state against its files). */
  async workspaceDiff(ref: string, opts: PatchRequest = {}): Promise<PatchResult> {
    const s = await this.workspaceStatus(ref);
    const w = resolveWorkspace(this.store, ref);
    return this.store.read(() => {
      const skipped: string[] = [];
      const pairs = workspacePairs(this.store, w.baseRootId, w.path, s.changes, pathFilters(opts.paths), skipped);
      return formatPairs(pairs, opts, skipped);
    });
  }

  // ---- Workspaces ----

  private get stateDir(): string {
    return `${this.store.path}.d/executions`;
  }

  private workspaceInfoOf(w: WorkspaceRow, state?: WorkspaceState): WorkspaceInfo {
    const info = workspaceInfo(w, getBranch(this.store, w.branchId)?.name ?? '', state ?? workspaceStates(this.store.path, [w]).get(toHex(w.id))!);
    const sandbox = sandboxNameOf(this.store, w);
    return sandbox === null ? info : { ...info, sandbox };
  }

  /**
   * Creates a Workspace of the Branch head at `at`: `materialize` writes the files there, `fuse`
   * mounts a live view served by the Store's daemon (started on demand), `auto` picks fuse when
   * this machine can mount. Default: `$LAYERFS_PROJECTION`, else materialize.
   */
  async createWorkspace(
    branch: string,
    opts: { at: string; projection?: 'materialize' | 'fuse' | 'auto'; backend?: 'kernel' | 'fuse-native'; sandbox?: string; onProgress?: (p: ExportProgress) => void },
  ): Promise<WorkspaceInfo> {
    const t0 = performance.now();
    const a0 = this.store.meter.allocatedGrowth;
    const b = resolveBranch(this.store, branch);
    checkSandbox(this.store, opts.sandbox);
    const projection = chooseProjection(opts.projection);
    const w = await projectionOf(projection).create(this.store, b, opts.at, { ...(opts.backend ? { backend: opts.backend } : {}), ...(opts.onProgress ? { onProgress: opts.onProgress } : {}) });
    if (opts.sandbox !== undefined) attachWorkspace(this.store, toHex(w.id), opts.sandbox);
    this.monitor.record(this.receipt('workspace.create', 'Created', t0, a0, null));
    return this.workspaceInfoOf(w);
  }

  workspace(ref: string): WorkspaceInfo {
    return this.workspaceInfoOf(resolveWorkspace(this.store, ref));
  }

  workspaces(opts: { branch?: string } = {}): WorkspaceInfo[] {
    const rows = this.store.read(() => {
      const b = opts.branch !== undefined ? resolveBranch(this.store, opts.branch).id : undefined;
      return listWorkspaces(this.store, b);
    });
    const states = workspaceStates(this.store.path, rows);
    return rows.map((w) => this.workspaceInfoOf(w, states.get(toHex(w.id))));
  }

  /** What changed in the Workspace, per path; a FUSE Workspace asks its daemon. */
  async workspaceStatus(ref: string): Promise<WorkspaceStatus> {
    const w = resolveWorkspace(this.store, ref);
    const s = await projectionOf(w.projection).changes(this.store, w);
    return { workspace: this.workspaceInfoOf(w), clean: s.changes.length === 0, changes: s.changes, skipped: s.skipped, ...(s.truncated ? { truncated: true } : {}) };
  }

  /**
   * Commits the Workspace's changes: Created | UpToDate | Busy | HeadMoved. The message, metadata
   * and author (default: $LAYERFS_AUTHOR, else user@host) become part of the Commit and its id.
   * `exclude` (materialized Workspaces): gitignore patterns whose new paths stay out of this Commit.
   */
  async commitWorkspace(ref: string, opts: CommitOptions = {}): Promise<CommitResult> {
    const t0 = performance.now();
    const a0 = this.store.meter.allocatedGrowth;
    const note = normalizeNote(opts, defaultAuthor());
    const w = resolveWorkspace(this.store, ref);
    if (opts.exclude?.some((p) => typeof p !== 'string' || p.trim() === '')) {
      throw new LayerFsError('ERR_INVALID_ARGUMENT', 'an exclude pattern must be a non-empty string', { argument: 'exclude' });
    }
    const { outcome: r, measure } = await projectionOf(w.projection).commit(this.store, w, this.stateDir, { note, strict: opts.strict ?? false, ...(opts.exclude ? { exclude: opts.exclude } : {}) });
    const base = this.receipt('workspace.commit', r.outcome, t0, a0, r.outcome === 'Created' ? r.write : null, measure.phases);
    if (measure.remote) {
      // The daemon's own time (its write transaction and cut) and allocated growth: the rest of ms is the round trip.
      base.phases = measure.remote.ms === undefined ? {} : { daemon: measure.remote.ms };
      base.allocatedGrowth = measure.remote.allocatedGrowth;
    }
    withReconcilePhase(base, measure.reconcileMs);
    let out: CommitResult;
    switch (r.outcome) {
      case 'Created':
        // A new head is always kept by retention.
        out = { ...base, outcome: 'Created', commit: { ...commitInfo(r.commit), pruned: false }, previousHead: r.previousHead ? toHex(r.previousHead) : null, changedPaths: r.changedPaths };
        if (r.reconciled) out.reconciled = r.reconciled;
        break;
      case 'UpToDate':
        out = { ...base, outcome: 'UpToDate', head: r.head ? toHex(r.head) : null };
        break;
      case 'Busy':
        out = { ...base, outcome: 'Busy', executions: r.executions };
        break;
      case 'Conflicted':
        out = { ...base, outcome: 'Conflicted', head: r.head ? toHex(r.head) : null, conflicts: conflictInfos(this.store, w.id) };
        break;
      default:
        out = { ...base, outcome: 'HeadMoved', expected: r.expected ? toHex(r.expected) : null, actual: r.actual ? toHex(r.actual) : null };
    }
    return this.monitor.record(out) as CommitResult;
  }

  /** Ends a Workspace and removes its files (a FUSE one is unmounted). Never commits; a clean end refuses changes. */
  async endWorkspace(ref: string, opts: { discard?: boolean; onProgress?: (p: RemoveProgress) => void } = {}): Promise<EndResult> {
    const t0 = performance.now();
    const a0 = this.store.meter.allocatedGrowth;
    const w = resolveWorkspace(this.store, ref);
    opts = endPolicy(this.store, w, opts);
    const r = await projectionOf(w.projection).end(this.store, w, opts, this.stateDir);
    if (r.outcome === 'Ended') recordEnded(this.store.path, { id: toHex(w.id), path: w.path });
    return this.monitor.record({ ...this.receipt('workspace.end', r.outcome, t0, a0, null), ...r } as EndResult) as EndResult;
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
    const r = await updateWorkspaceOf(this.store, resolveWorkspace(this.store, ref), this.stateDir);
    return this.monitor.record({ ...this.receipt('workspace.update', r.outcome, t0, a0, null), ...r } as UpdateResult) as UpdateResult;
  }

  /** Runs a command in the Workspace in the foreground (stdio inherited); resolves with its end. */
  async exec(ref: string, argv: string[], opts: { env?: NodeJS.ProcessEnv } = {}): Promise<ExecutionInfo> {
    const t0 = performance.now();
    const w = resolveWorkspace(this.store, ref);
    const e = await runExecution({ stateDir: this.stateDir, workspaceId: toHex(w.id), cwd: projectionOf(w.projection).execDir(w), argv, env: opts.env, sandbox: planFor(this.store, w) });
    // A sandboxed execution's receipt carries its resource use (the cgroup's figures).
    if (e.resources) this.monitor.record({ ...this.receipt('workspace.exec', execOutcome(e), t0, this.store.meter.allocatedGrowth, null), execution: e.id, sandbox: e.sandbox, resources: e.resources });
    return e;
  }

  /** Starts a command in the background; follow it with executionOutput(). */
  execDetached(ref: string, argv: string[], opts: { env?: NodeJS.ProcessEnv } = {}): ExecutionInfo {
    const w = resolveWorkspace(this.store, ref);
    return startDetached({ stateDir: this.stateDir, workspaceId: toHex(w.id), cwd: projectionOf(w.projection).execDir(w), argv, env: opts.env, sandbox: planFor(this.store, w) });
  }

  /** An interactive shell in the Workspace on a PTY of its own (inside its Sandbox when it has one). */
  shell(ref: string, opts: ShellOptions = {}): ShellSession {
    return openShell(this.store, this.stateDir, ref, opts);
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
    return getExecution(this.stateDir, id);
  }

  executions(opts: { workspace?: string } = {}): ExecutionInfo[] {
    const ws = opts.workspace !== undefined ? toHex(resolveWorkspace(this.store, opts.workspace).id) : undefined;
    return listExecutions(this.stateDir, ws);
  }

  executionOutput(id: string, opts: { follow?: boolean; write: (chunk: Buffer) => void; signal?: AbortSignal }): Promise<ExecutionInfo> {
    return readOutput(this.stateDir, id, opts);
  }

  stopExecution(id: string, opts: { graceMs?: number } = {}): Promise<{ outcome: 'Stopped' | 'AlreadyEnded'; info: ExecutionInfo }> {
    return stopExecution(this.stateDir, id, opts);
  }

  // ---- Monitor ----

  /** A summary of recent receipts (this Store's receipt journal, kept beside the Store). */
  monitorSnapshot(): MonitorSnapshot {
    return this.monitor.snapshot();
  }

  /**
   * Traverses every state (or those of one LayerStack and its Branches): logical bytes of each,
   * the canonical bytes each added, Store-wide unique, stored and allocated bytes, the dedup
   * ratio, and the largest contributors.
   */
  analyzeDedup(opts: { layerStack?: string; top?: number } = {}): DedupAnalysis {
    return this.store.read(() => {
      const stackId = opts.layerStack !== undefined ? resolveLayerStack(this.store, opts.layerStack).id : undefined;
      const states: { kind: string; id: string; rootId: Buffer; label: string }[] = [];
      const stacks = new Map(listLayerStacks(this.store).map((s) => [toHex(s.id), s.name]));
      for (const l of listLayers(this.store, stackId)) states.push({ kind: 'layer', id: toHex(l.id), rootId: l.rootId, label: `${stacks.get(toHex(l.layerStackId))}#${l.seq}` });
      // A Commit shared by several Branches (forked from it) is one state, labelled by the
      // Branch that made it first.
      const seenCommits = new Set<string>();
      const kept = keptCommits(this.store);
      for (const b of listBranches(this.store, stackId)) {
        for (const c of branchLog(this.store, b).reverse()) {
          const id = toHex(c.id);
          if (seenCommits.has(id) || !kept.has(id)) continue;
          seenCommits.add(id);
          states.push({ kind: 'commit', id, rootId: c.rootId, label: `${b.name}@${id.slice(0, 12)}` });
        }
      }
      const byRoot = new Map<string, string>();
      const r = analyzeDedup(this.store, states, this.info().fileBytes, opts.top ?? 10);
      for (const s of states) byRoot.set(`${s.kind}:${s.id}`, s.label);
      const perBranch = new Map<string, { logicalBytes: number; newBytes: number }>();
      for (const u of r.states) {
        const label = byRoot.get(`${u.kind}:${u.id}`) ?? '';
        const branch = u.kind === 'commit' ? label.split('@')[0]! : `layerstack ${label.split('#')[0]}`;
        const agg = perBranch.get(branch) ?? { logicalBytes: 0, newBytes: 0 };
        agg.logicalBytes += u.logicalBytes;
        agg.newBytes += u.newBytes;
        perBranch.set(branch, agg);
      }
      const rootOf = new Map(states.map((s) => [`${s.kind}:${s.id}`, s.rootId]));
      return {
        ...r,
        states: r.states.map((u) => ({ ...u, label: byRoot.get(`${u.kind}:${u.id}`) ?? '' })),
        branches: [...perBranch.entries()].map(([name, v]) => ({ name, ...v, dedupRatio: v.newBytes ? v.logicalBytes / v.newBytes : 0 })),
        largest: r.largest.map((c) => {
          const path = this.store.view(rootOf.get(c.state)!).pathOf(c.serial);
          return { ...c, label: byRoot.get(c.state) ?? '', path: path ? path.toString('utf8') : '' };
        }),
      };
    });
  }

  // ---- Deletion, retention and gc (retention.ts) ----

  private get lifecycle(): lifecycle.RetentionContext {
    return {
      store: this.store,
      receipt: (op, outcome, t0, a0) => this.receipt(op, outcome, t0, a0, null),
      record: (r) => this.monitor.record(r) as typeof r,
      endWorkspace: (ref, opts) => this.endWorkspace(ref, opts),
      branchInfo: (ref) => this.branch(ref),
    };
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

  // ---- Mount daemon ----

  /** The Store's mount daemon (pid, mounts with pending counts, what its start recovered), or null when none runs. */
  daemonStatus(): Promise<DaemonStatus | null> {
    return daemonStatus(this.store.path);
  }

  /** Stops the daemon, unmounting every FUSE Workspace (they become lost); refuses (Dirty) with uncommitted changes unless discard. */
  stopDaemon(opts: { discard?: boolean } = {}): Promise<StopDaemonResult> {
    return stopDaemon(this.store.path, opts);
  }

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
  remoteInit(remote?: string, opts: remotes.RemoteOptions = {}): Promise<{ remote: string; from: number | null; to: number }> {
    return remotes.remoteInit(this.store, remote, opts);
  }

  /** Re-hashes everything the remote's states reach (storing nothing); `ok: false` names the first damage. */
  remoteVerify(remote?: string, opts: remotes.RemoteOptions = {}): Promise<remotes.RemoteVerifyReport> {
    return remotes.remoteVerify(this.store, remote, opts);
  }

  /** Sends a LayerStack or a Branch; the remote head moves by compare-and-swap (ERR_HEAD_MOVED). */
  push(ref: string, opts: remotes.RemoteOptions & { remote?: string } = {}): Promise<remotes.PushResult> {
    return remotes.push(this.store, opts.remote, ref, opts);
  }

  /** Fetches objects and heads of a remote; its states become readable as REMOTE/NAME. */
  fetch(remote?: string, opts: remotes.RemoteOptions & { layerStack?: string } = {}): Promise<remotes.FetchResult> {
    return remotes.fetch(this.store, remote, opts);
  }

  close(): void {
    closeDaemonConnection(this.store.path);
    this.store.close();
  }
}
