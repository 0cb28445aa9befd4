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
  type CommitNote,
  type LayerRow,
} from '../history/index.js';
import { Monitor, type MonitorSnapshot, type Receipt } from '../monitor/receipt.js';
import { analyzeDedup, exportTree, InodeKind, readRange, Store, verifyStore, type ByteRange, type ImportProgress, type WriteStats } from '../store/index.js';
import { branchInfo, commitInfo, entryInfo, layerInfo, layerStackInfo, workspaceInfo } from './convert.js';
import {
  commitWorkspace,
  createResolutionWorkspace,
  editFileRanges,
  createWorkspace,
  endWorkspace,
  getExecution,
  listExecutions,
  listWorkspaces,
  readOutput,
  resolveWorkspace,
  runExecution,
  startDetached,
  stopExecution,
  workspaceStatus,
  type ExecutionInfo,
  type RangeEdit,
  type WorkspaceRow,
} from '../workspace/index.js';
import { closeDaemonConnection, daemonStatus, stopDaemon } from '../mount/index.js';
import { chooseProjection, commitMountedWorkspace, createMountedWorkspace, endMountedWorkspace, mountedWorkspaceChanges, workspaceStates, type WorkspaceState } from './mounted.js';
import { defaultAuthor } from './author.js';
import { splitStatePath } from './paths.js';
import { conflictInfos, resolveConflictOf, updateWorkspaceOf, withReconcilePhase } from './reconcile.js';
import { resolveState, type ResolvedState } from './refs.js';
import type {
  ConflictInfo,
  UpdateResult,
  AddResult,
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
    const r = await initLayerStack(this.store, { name: opts.name, source: opts.source, onProgress: opts.onProgress });
    const im = r.import;
    const base = this.receipt('layerstack.init', 'Created', t0, a0, r.write, im ? im.phases : { walkRead: 0, chunkHash: 0, write: 0 });
    return this.monitor.record({
      ...base,
      outcome: 'Created',
      layerStack: layerStackInfo(r.layerStack),
      layer: layerInfo(r.layer, r.layerStack.name),
      files: im?.files ?? 0,
      directories: (im?.directories ?? 0) + 1,
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
  export(ref: StateRef, target: string): ExportReceipt {
    const t0 = performance.now();
    const s = this.store.read(() => exportTree(this.store.view(this.state(ref).rootId), target));
    const base = this.receipt('export', 'Exported', t0, this.store.meter.allocatedGrowth, null);
    return this.monitor.record({ ...base, outcome: 'Exported', target, ...s } as ExportReceipt) as ExportReceipt;
  }

  /** Re-reads and re-hashes everything reachable from every state. */
  verify(): VerifyResult {
    return this.store.read(() => {
      const states = [
        ...listLayers(this.store).map((l) => ({ kind: 'layer', id: toHex(l.id), rootId: l.rootId })),
        ...(this.store.db.prepare('SELECT id, root_id AS rootId FROM commits').all() as { id: Buffer; rootId: Buffer }[]).map((c) => ({ kind: 'commit', id: toHex(c.id), rootId: c.rootId })),
        ...listWorkspaces(this.store).map((w) => ({ kind: 'workspace', id: toHex(w.id), rootId: w.baseRootId })),
      ];
      const r = verifyStore(this.store, states);
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

  /** A Branch's Commits, newest first. */
  /** A Branch's Commits, newest first; with `path`, only those that changed something at or below it. */
  log(branch: string, opts: { limit?: number; path?: string } = {}): CommitInfo[] {
    return this.store.read(() => {
      const b = resolveBranch(this.store, branch);
      if (opts.path === undefined) return branchLog(this.store, b, opts.limit).map(commitInfo);
      const path = opts.path;
      const all = branchLog(this.store, b);
      const baseRoot = (c: (typeof all)[number]): Buffer => (c.parentCommitId ? all.find((p) => p.id.equals(c.parentCommitId!))?.rootId : undefined) ?? getLayer(this.store, c.baseLayerId)!.rootId;
      const out: CommitInfo[] = [];
      for (const c of all) {
        if (out.length >= (opts.limit ?? Number.MAX_SAFE_INTEGER)) break;
        if (touchesPath(this.store, baseRoot(c), c.rootId, path)) out.push(commitInfo(c));
      }
      return out;
    });
  }

  /** Commits of one Branch (newest first), or of every Branch. */
  commits(opts: { branch?: string } = {}): CommitInfo[] {
    if (opts.branch !== undefined) return this.log(opts.branch);
    return this.store.read(() => {
      const seen = new Map<string, CommitInfo>();
      for (const b of listBranches(this.store)) for (const c of branchLog(this.store, b)) seen.set(toHex(c.id), commitInfo(c));
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

  // ---- Diff ----

  /** Differences between two states (any StateRef), paged. */
  diff(from: StateRef, to: StateRef, opts: { after?: string; limit?: number } = {}): DiffPage {
    return this.store.read(() => diffStates(this.store, this.state(from).rootId, this.state(to).rootId, opts));
  }

  // ---- Workspaces ----

  private get stateDir(): string {
    return `${this.store.path}.d/executions`;
  }

  private workspaceInfoOf(w: WorkspaceRow, state?: WorkspaceState): WorkspaceInfo {
    return workspaceInfo(w, getBranch(this.store, w.branchId)?.name ?? '', state ?? workspaceStates(this.store.path, [w]).get(toHex(w.id))!);
  }

  /**
   * Creates a Workspace of the Branch head at `at`: `materialize` writes the files there, `fuse`
   * mounts a live view served by the Store's daemon (started on demand), `auto` picks fuse when
   * this machine can mount. Default: `$LAYERFS_PROJECTION`, else materialize.
   */
  async createWorkspace(branch: string, opts: { at: string; projection?: 'materialize' | 'fuse' | 'auto'; backend?: 'kernel' | 'fuse-native' }): Promise<WorkspaceInfo> {
    const t0 = performance.now();
    const a0 = this.store.meter.allocatedGrowth;
    const b = resolveBranch(this.store, branch);
    const projection = chooseProjection(opts.projection);
    const w = projection === 'fuse' ? await createMountedWorkspace(this.store, b, opts.at, { backend: opts.backend }) : createWorkspace(this.store, b, opts.at, projection);
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
    if (w.projection === 'fuse') {
      const m = await mountedWorkspaceChanges(this.store, w);
      return { workspace: this.workspaceInfoOf(w), clean: m.changes.length === 0, changes: m.changes, skipped: [], ...(m.truncated ? { truncated: true } : {}) };
    }
    const s = workspaceStatus(this.store, w);
    const text = (b: Buffer) => b.toString('utf8');
    return {
      workspace: this.workspaceInfoOf(w),
      clean: s.entries.length === 0,
      changes: s.entries.map((e) => ({ change: e.change, path: text(e.path), ...(e.oldPath ? { oldPath: text(e.oldPath) } : {}), kind: e.kind })),
      skipped: s.skipped,
    };
  }

  /**
   * Commits the Workspace's changes: Created | UpToDate | Busy | HeadMoved. The message, metadata
   * and author (default: $LAYERFS_AUTHOR, else user@host) become part of the Commit and its id.
   */
  async commitWorkspace(ref: string, opts: CommitOptions = {}): Promise<CommitResult> {
    const t0 = performance.now();
    const a0 = this.store.meter.allocatedGrowth;
    const note = normalizeNote(opts, defaultAuthor());
    const w = resolveWorkspace(this.store, ref);
    if (w.projection === 'fuse') return this.commitMounted(w, t0, note, opts.strict ?? false);
    const phases = { walkRead: 0, chunkHash: 0, write: 0 };
    const r = await commitWorkspace(this.store, w, this.stateDir, phases, { note, strict: opts.strict ?? false });
    const base = this.receipt('workspace.commit', r.outcome, t0, a0, r.outcome === 'Created' ? r.write : null, phases);
    withReconcilePhase(base, r.outcome === 'Created' ? r.reconciled?.ms : r.outcome === 'Conflicted' ? r.ms : undefined);
    let out: CommitResult;
    switch (r.outcome) {
      case 'Created':
        out = { ...base, outcome: 'Created', commit: commitInfo(r.commit), previousHead: r.previousHead ? toHex(r.previousHead) : null, changedPaths: r.changedPaths };
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

  /**
   * A FUSE Workspace's commit, run by the daemon: its reply carries the whole Commit row and the
   * allocated growth of its own write transaction, so nothing is re-read here.
   */
  private async commitMounted(w: WorkspaceRow, t0: number, note: CommitNote, strict: boolean): Promise<CommitResult> {
    const r = await commitMountedWorkspace(this.store, w, this.stateDir, note, strict);
    const write = r.outcome === 'Created' ? { objectsInserted: r.objectsInserted, objectsReused: r.objectsReused, bytesInserted: r.bytesInserted, bytesReused: r.bytesReused } : null;
    const base = {
      ...this.receipt('workspace.commit', r.outcome, t0, 0, write),
      // The daemon's own time (its write transaction and cut) and allocated growth: the rest of ms is the round trip.
      phases: (r.outcome === 'Busy' ? {} : { daemon: r.ms }) as Record<string, number>,
      allocatedGrowth: r.outcome === 'Created' ? r.allocatedGrowth : 0,
    };
    let out: CommitResult;
    switch (r.outcome) {
      case 'Created':
        out = {
          ...base,
          outcome: 'Created',
          commit: { id: r.commitId, rootId: r.rootId, parentCommitId: r.previousHead, baseLayerId: r.baseLayerId, createdAt: r.createdAt, message: r.message, metadata: r.metadata, author: r.author },
          previousHead: r.previousHead,
          changedPaths: r.recordsWritten + r.deleted,
          ...(r.reconciled ? { reconciled: r.reconciled } : {}),
        };
        withReconcilePhase(out, r.reconciled?.ms);
        break;
      case 'UpToDate':
        out = { ...base, outcome: 'UpToDate', head: r.head };
        break;
      case 'Busy':
        out = { ...base, outcome: 'Busy', executions: r.executions };
        break;
      case 'Conflicted':
        out = { ...base, outcome: 'Conflicted', head: r.head, conflicts: conflictInfos(this.store, w.id) };
        break;
      default:
        out = { ...base, outcome: 'HeadMoved', expected: r.expected, actual: r.actual };
    }
    return this.monitor.record(out) as CommitResult;
  }

  /** Ends a Workspace and removes its files (a FUSE one is unmounted). Never commits; a clean end refuses changes. */
  async endWorkspace(ref: string, opts: { discard?: boolean } = {}): Promise<EndResult> {
    const t0 = performance.now();
    const a0 = this.store.meter.allocatedGrowth;
    const w = resolveWorkspace(this.store, ref);
    const r = w.projection === 'fuse' ? await endMountedWorkspace(this.store, w, opts, this.stateDir) : await endWorkspace(this.store, w, opts, this.stateDir);
    return this.monitor.record({ ...this.receipt('workspace.end', r.outcome, t0, a0, null), ...r } as EndResult) as EndResult;
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
    const w = resolveWorkspace(this.store, ref);
    return runExecution({ stateDir: this.stateDir, workspaceId: toHex(w.id), cwd: w.path, argv, env: opts.env });
  }

  /** Starts a command in the background; follow it with executionOutput(). */
  execDetached(ref: string, argv: string[], opts: { env?: NodeJS.ProcessEnv } = {}): ExecutionInfo {
    const w = resolveWorkspace(this.store, ref);
    return startDetached({ stateDir: this.stateDir, workspaceId: toHex(w.id), cwd: w.path, argv, env: opts.env });
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
      for (const b of listBranches(this.store, stackId)) {
        for (const c of branchLog(this.store, b).reverse()) {
          const id = toHex(c.id);
          if (seenCommits.has(id)) continue;
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
