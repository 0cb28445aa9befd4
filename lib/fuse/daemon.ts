/**
 * The mount daemon: one process per Store serving every mounted Workspace of that Store.
 *
 * Start: take the per-Store lock (an exclusive flock on `<store>.d/daemon.lock`, inside the
 * 0700 directory so no other user can take it first; released by the kernel when the process
 * dies, even by SIGKILL), detach the stale mounts a dead predecessor left
 * (recorded in mounts.json) and report which Workspaces lost uncommitted work, then listen on
 * `<store>.d/daemon.sock` (0600) with a fresh random token in `<store>.d/daemon.token` (0600).
 *
 * Requests are JSON lines carrying the token. A bad request gets an error answer; nothing a
 * client sends can stop the daemon except `stop`. The daemon exits when its last mount ends
 * (or when nothing was mounted within IDLE_MS of its start).
 *
 * Rule: this process serves FUSE mounts from its event loop, so it never makes a synchronous
 * file system call that could reach one of them (it would deadlock). Mount points are only
 * touched with async calls; synchronous I/O is limited to `<store>.d` and the Store file,
 * which a mount may never contain.
 */
import { timingSafeEqual } from 'node:crypto';
import { closeSync, constants as fsc, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Server, Socket } from 'node:net';
import { join } from 'node:path';
import { LayerFsError, isLayerFsError } from '../errors.js';
import { ensurePrivateDir, openPrivateFile } from '../monitor/private-file.js';
import { fdLock, fuseSpinStats } from '../native/fd.js';
import { getBranch, normalizeNote, type CommitNote, type CommitNoteInput } from '../history/index.js';
import { Store } from '../store/index.js';
import { getWorkspace } from '../workspace/index.js';
import { DaemonCommits } from './daemon-commits.js';
import { removeSpoolDir, spoolRemovalsDone } from './spool.js';

import { backendFor } from './daemon-backend.js';
import { PAGE_CACHE_BYTES, SERVING_CACHE_KIB } from './budget.js';
import { checkMountPoint } from './daemon-mount-point.js';
import { forgetUnmounted, orphanedMounts, ORPHAN_POLL_MS } from './daemon-orphans.js';
import { WorkerServer, type Entry, type WorkspaceServer } from './daemon-served.js';
import { listenOnSocket, serveConnection } from './daemon-socket.js';
import { KernelMount, endSharedCheckpoints, endSpareWorker, spareStats } from './kernel.js';
import { userAllowOther } from './probe.js';
import { detach, mountTable } from './mounttab.js';
import type { ServedState } from './outcome.js';
import {
  changedMarker,
  daemonPaths,
  refuseHardLinkedStore,
  PROTOCOL_VERSION,
  type Backend,
  type DaemonPaths,
  type DaemonStatus,
  type MountRecord,
  type MountRequest,
  type MountStatus,
  type FuseCommitOutcome,
  type RecoveryReport,
  type Request,
  type Response,
  type StopOutcome,
  type UnmountOutcome,
  type WireError,
} from './protocol.js';

/** A daemon started on demand exits if nothing gets mounted this soon. */
const IDLE_MS = 30_000;
/** How long a stopping daemon waits for its spools' removal (a large one goes on after it). */
const SPOOL_REMOVAL_WAIT_MS = 2_000;

function bad(message: string, details: Record<string, unknown> = {}): LayerFsError {
  return new LayerFsError('ERR_INVALID_ARGUMENT', message, details);
}

function hexArg(v: unknown, bytes: number, what: string, nullable = false): string | null {
  if (nullable && v === null) return null;
  if (typeof v !== 'string' || v.length !== bytes * 2 || !/^[0-9a-f]+$/.test(v)) throw bad(`${what} must be ${bytes * 2} lowercase hex digits`);
  return v;
}

export class Daemon {
  private readonly paths: DaemonPaths;
  private store!: Store;
  private readonly mounts = new Map<string, Entry>();
  private server: Server | null = null;
  private lockFd: number | null = null;
  private token!: Buffer;
  private recovered: RecoveryReport | null = null;
  private readonly startedAt = new Date().toISOString();
  private readonly commits = new DaemonCommits(
    () => this.mounts.values(),
    () => this.stopping,
  );
  private idleTimer: NodeJS.Timeout | null = null;
  private orphanTimer: NodeJS.Timeout | null = null;
  private readonly unmounting = new Map<string, Promise<UnmountOutcome>>();
  private stopping = false;
  /** Mount paths being set up (their records are not in `mounts` yet). */
  private readonly pendingPaths = new Set<string>();
  /** Client connections (kept open between requests): ended at shutdown so server.close() completes. */
  private readonly conns = new Set<Socket>();

  constructor(storePath: string) {
    this.paths = daemonPaths(storePath);
  }

  log(message: string): void {
    process.stderr.write(`${new Date().toISOString()} [${process.pid}] ${message}\n`);
  }

  /** Returns false when another daemon already serves this Store. */
  async start(): Promise<boolean> {
    const p = this.paths;
    ensurePrivateDir(p.dir);
    const st = lstatSync(p.dir);
    if (process.getuid && st.uid !== process.getuid()) {
      throw new LayerFsError('ERR_UNSAFE_PATH', `${p.dir} must be a directory owned by this user and writable only by it`, { path: p.dir });
    }
    refuseHardLinkedStore(p.store);
    if (!(await this.takeLock())) return false;
    this.store = Store.open(p.store, { cacheKiB: SERVING_CACHE_KIB, mapStreams: false, pageCacheBytes: PAGE_CACHE_BYTES });
    await this.recover();
    await this.listen();
    this.idleTimer = setTimeout(() => {
      if (this.mounts.size === 0 && this.pendingPaths.size === 0) void this.shutdown('idle');
    }, IDLE_MS);
    this.orphanTimer = setInterval(() => void this.endOrphans(), ORPHAN_POLL_MS).unref();
    for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => void this.shutdown(sig));
    process.on('SIGHUP', () => {});
    this.log(`serving ${p.store}`);
    return true;
  }

  /** Takes the per-Store lock, waiting a little for a predecessor that is on its way out. */
  private async takeLock(waitMs = 5000): Promise<boolean> {
    const deadline = performance.now() + waitMs;
    const fd = openPrivateFile(this.paths.lock, fsc.O_RDWR | fsc.O_CREAT);
    for (;;) {
      if (fdLock(fd)) {
        this.lockFd = fd;
        return true;
      }
      if (performance.now() > deadline) {
        closeSync(fd);
        return false;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Cleans what a dead predecessor left: stale mounts, spools, the old socket. */
  private async recover(): Promise<void> {
    const p = this.paths;
    let previous: MountRecord[] = [];
    try {
      const j = JSON.parse(readFileSync(p.mounts, 'utf8')) as { mounts?: MountRecord[] };
      if (Array.isArray(j.mounts)) previous = j.mounts.filter((m) => m && typeof m.path === 'string' && typeof m.workspaceId === 'string');
    } catch {
      /* none, or unreadable: nothing to recover */
    }
    const report: RecoveryReport = { at: new Date().toISOString(), cleaned: [], lostUncommitted: [], ended: [] };
    if (previous.length > 0) {
      const table = await mountTable();
      for (const m of previous) {
        let stale = false;
        try {
          await stat(m.path);
        } catch (e) {
          stale = (e as NodeJS.ErrnoException).code === 'ENOTCONN';
        }
        const type = table.get(m.path);
        if (stale || (type !== undefined && type.startsWith('fuse'))) {
          if (await detach(m.path)) report.cleaned.push(m.path);
          else this.log(`could not detach the stale mount ${m.path}`);
        }
        report.ended.push({ workspaceId: m.workspaceId, path: m.path });
        if (m.dirty || existsSync(changedMarker(join(p.spool, m.workspaceId)))) report.lostUncommitted.push({ workspaceId: m.workspaceId, path: m.path, branchId: m.branchId });
      }
      this.recovered = report;
      this.writeJson(p.recovery, report);
      this.log(`recovered: ${report.cleaned.length} stale mount(s) detached, ${report.lostUncommitted.length} Workspace(s) lost uncommitted work`);
    }
    rmSync(p.spool, { recursive: true, force: true });
    mkdirSync(p.spool, { recursive: true, mode: 0o700 });
    this.saveMounts();
  }

  private writeJson(path: string, value: unknown): void {
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(value, null, 2) + '\n', { mode: 0o600 });
    renameSync(tmp, path);
  }

  private saveMounts(): void {
    this.writeJson(this.paths.mounts, { version: 1, pid: process.pid, startedAt: this.startedAt, mounts: [...this.mounts.values()].map((e) => e.record) });
  }

  private async listen(): Promise<void> {
    const { server, token } = await listenOnSocket(this.paths, (c) => serveConnection(c, (line) => this.answer(line), this.conns, () => this.commits.progress()), (m) => this.log(m));
    this.token = token;
    this.server = server;
  }

  private checkToken(t: unknown): void {
    const given = typeof t === 'string' && /^[0-9a-f]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.alloc(32);
    if (!timingSafeEqual(given, this.token) || typeof t !== 'string') throw new LayerFsError('ERR_INVALID_ARGUMENT', 'bad or missing daemon token', { hint: `read it from ${this.paths.token}` });
  }

  async answer(line: string): Promise<Response> {
    try {
      let req: unknown;
      try {
        req = JSON.parse(line);
      } catch {
        throw bad('the request is not JSON');
      }
      if (req === null || typeof req !== 'object' || Array.isArray(req)) throw bad('the request must be a JSON object');
      const r = req as Record<string, unknown>;
      this.checkToken(r.token);
      if (this.stopping) throw new LayerFsError('ERR_BUSY', 'the daemon is stopping', { stopping: true });
      const result = await this.dispatch(r as unknown as Request);
      return { ok: true, result };
    } catch (e) {
      if (isLayerFsError(e)) return { ok: false, error: e.toJSON() as WireError };
      this.log(`request failed: ${(e as Error)?.stack ?? String(e)}`);
      return { ok: false, error: { code: 'ERR_NATIVE', message: (e as Error)?.message ?? String(e) } };
    }
  }

  private async dispatch(r: Request): Promise<unknown> {
    switch (r.op) {
      case 'mount':
        return this.mount(r);
      case 'commit':
        return this.commit(String(hexArg(r.workspaceId, 16, 'workspaceId')), normalizeNote(r.note as CommitNoteInput | undefined, ''), r.strict === true);
      case 'unmount':
        return this.unmount(String(hexArg(r.workspaceId, 16, 'workspaceId')), r.discard === true, r.forget === true);
      case 'changes': {
        const e = this.entry(String(hexArg(r.workspaceId, 16, 'workspaceId')));
        if (e.committing) await e.committing.catch(() => {});
        return e.server.changes();
      }
      case 'status':
        return this.status();
      case 'stop':
        return this.stop(r.discard === true);
      default:
        throw bad(`unknown op ${JSON.stringify((r as { op?: unknown }).op)}`, { hint: 'mount, commit, changes, unmount, status or stop' });
    }
  }

  private async stateOf(e: Entry): Promise<ServedState> {
    if (e.committing) return { changed: e.record.dirty, pending: { records: 0, deleted: 0, directories: 0 }, openHandles: 0, committing: true };
    try {
      return await e.server.state();
    } catch {
      return { changed: e.record.dirty, pending: { records: 0, deleted: 0, directories: 0 }, openHandles: 0, committing: false };
    }
  }

  async status(): Promise<DaemonStatus> {
    const mounts: MountStatus[] = [];
    for (const e of [...this.mounts.values()]) {
      const st = await this.stateOf(e);
      mounts.push({ ...e.record, pending: st.pending, openHandles: st.openHandles, committing: st.committing, ...(st.requests ? { requests: st.requests } : {}) });
    }
    return { protocol: PROTOCOL_VERSION, pid: process.pid, storePath: this.paths.store, startedAt: this.startedAt, mounts, recovered: this.recovered, spin: fuseSpinStats(), spares: spareStats() };
  }

  private async mount(r: MountRequest): Promise<{ workspaceId: string; path: string; rootId: string; backend: Backend }> {
    const workspaceId = hexArg(r.workspaceId, 16, 'workspaceId')!;
    const branchId = hexArg(r.branchId, 16, 'branchId')!;
    const expectedHead = hexArg(r.expectedHead, 32, 'expectedHead', true);
    const expectedBase = hexArg(r.expectedBase, 32, 'expectedBase')!;
    const rootId = hexArg(r.rootId, 32, 'rootId')!;
    const backend = backendFor(r.backend);
    if (this.mounts.has(workspaceId)) throw new LayerFsError('ERR_EXISTS', `Workspace ${workspaceId} is mounted already`, { id: workspaceId });
    const real = await checkMountPoint(r.path, this.mounts.values(), this.pendingPaths, this.paths);
    if (this.mounts.has(workspaceId)) throw new LayerFsError('ERR_EXISTS', `Workspace ${workspaceId} is mounted already`, { id: workspaceId });
    this.pendingPaths.add(real);
    const spoolDir = `${this.paths.spool}/${workspaceId}`;
    let server: WorkspaceServer | null = null;
    try {
      if (r.allowOther !== undefined && typeof r.allowOther !== 'boolean') throw bad('allowOther must be a boolean');
      // Mounts let other users in by default, with the kernel checking each file's mode (and
      // nosuid,nodev always): they get what the modes grant. An ordinary user's only where
      // /etc/fuse.conf allows it (user_allow_other), else fusermount would refuse the mount.
      const allowOther = r.allowOther ?? (process.getuid?.() === 0 || userAllowOther());
      const branchBuf = Buffer.from(branchId, 'hex');
      if (!getBranch(this.store, branchBuf)) throw new LayerFsError('ERR_NOT_FOUND', `no Branch ${branchId}`, { id: branchId });
      const rootBuf = Buffer.from(rootId, 'hex');
      if (!this.store.objects.has(rootBuf)) throw new LayerFsError('ERR_NOT_FOUND', `no state ${rootId} in this Store`, { id: rootId });
      // Any other object (a blob, a page) or a damaged root is refused here, with a typed error,
      // not deep inside the serving thread.
      try {
        this.store.view(rootBuf);
      } catch (e) {
        throw new LayerFsError('ERR_INVALID_ARGUMENT', `${rootId} is not a readable state of this Store: ${(e as Error).message}`, { id: rootId });
      }
      const wsBuf = Buffer.from(workspaceId, 'hex');
      const hasRow = getWorkspace(this.store, wsBuf) !== undefined;
      rmSync(spoolDir, { recursive: true, force: true });
      mkdirSync(spoolDir, { recursive: true, mode: 0o700 });
      const record: MountRecord = { workspaceId, branchId, path: r.path, expectedHead, expectedBase, rootId, backend, allowOther, mountedAt: new Date().toISOString(), dirty: false };
      const entry: Entry = { record, server: null as unknown as WorkspaceServer, real, committing: null, cells: null };
      const onChange = () => {
        if (!entry.record.dirty) {
          entry.record.dirty = true;
          if (this.mounts.get(workspaceId) === entry) this.saveMounts();
        }
      };
      const mountOpts = { fsname: `layerfs:${workspaceId.slice(0, 12)}`, allowOther, log: (m: string) => this.log(`${workspaceId.slice(0, 8)}: ${m}`) };
      const params = { storePath: this.paths.store, spoolDir, rootId, branchId, expectedHead, expectedBase, workspaceId: hasRow ? workspaceId : null, protocol: {} };
      server = new WorkerServer(new KernelMount(r.path, params, mountOpts, onChange));
      entry.server = server;
      // Recorded before mounting, so a crash in between still gets cleaned up next start.
      this.mounts.set(workspaceId, entry);
      this.saveMounts();
      try {
        await server.mount();
      } catch (e) {
        this.mounts.delete(workspaceId);
        this.saveMounts();
        // A typed failure (errno, what to do) keeps its code and hint.
        if (e instanceof LayerFsError) throw new LayerFsError(e.code, `cannot mount at ${r.path}: ${e.message}`, { ...e.details, path: r.path, hint: undefined });
        throw new LayerFsError('ERR_NATIVE', `cannot mount at ${r.path}: ${(e as Error).message}`, { path: r.path, hint: 'is /dev/fuse usable and fusermount3 installed?' });
      }
      if (this.idleTimer) clearTimeout(this.idleTimer);
      this.log(`mounted ${workspaceId} at ${r.path} (${backend})`);
      return { workspaceId, path: r.path, rootId, backend };
    } catch (e) {
      if (!this.mounts.has(workspaceId)) {
        server?.dispose();
        rmSync(spoolDir, { recursive: true, force: true });
      }
      throw e;
    } finally {
      this.pendingPaths.delete(real);
    }
  }

  private entry(workspaceId: string): Entry {
    const e = this.mounts.get(workspaceId);
    if (!e) throw new LayerFsError('ERR_NOT_FOUND', `Workspace ${workspaceId} is not mounted by this daemon`, { id: workspaceId });
    return e;
  }

  /** The note comes from a client: normalizeNote has checked it like any other argument. */
  private async commit(workspaceId: string, note: CommitNote, strict: boolean): Promise<FuseCommitOutcome> {
    const e = this.entry(workspaceId);
    const served = await this.commits.run(e, note, strict);
    const out = served.outcome;
    if (out.outcome === 'HeadMoved' || out.outcome === 'Conflicted') return out;
    e.record.expectedHead = out.outcome === 'Created' ? out.commitId : out.head;
    e.record.rootId = out.rootId;
    e.record.dirty = served.changed;
    // After the answer is on its way: the caller waits for the Commit, not for our bookkeeping
    // (a crash before this only makes the next start report work as lost that was committed).
    setImmediate(() => {
      if (this.mounts.get(workspaceId) === e) this.saveMounts();
      if (out.outcome === 'Created') this.log(`committed ${workspaceId}: ${out.commitId} (${out.objectsInserted} objects, ${out.bytesInserted} bytes, ${out.ms} ms)`);
    });
    return out;
  }

  /**
   * `forget`: the row goes too, before the answer (an end whose caller dies meanwhile is whole).
   * Two ends of one mount at once (a caller's and the orphan sweep's) share the first one's work.
   */
  private unmount(workspaceId: string, discard: boolean, forget = false): Promise<UnmountOutcome> {
    const running = this.unmounting.get(workspaceId);
    if (running) return running;
    const p = this.unmountOnce(workspaceId, discard, forget).finally(() => this.unmounting.delete(workspaceId));
    this.unmounting.set(workspaceId, p);
    return p;
  }

  private async unmountOnce(workspaceId: string, discard: boolean, forget: boolean): Promise<UnmountOutcome> {
    const e = this.entry(workspaceId);
    // A running commit is not waited for: discarding aborts it, keeping answers Dirty now.
    if (e.committing && !discard) return { outcome: 'Dirty', pending: { records: 0, deleted: 0, directories: 0 } };
    if (e.committing) await this.commits.abort(e);
    const st = await this.stateOf(e);
    if (st.changed && !discard) return { outcome: 'Dirty', pending: st.pending };
    await this.detachEntry(e);
    if (forget) {
      try {
        forgetUnmounted(this.store, workspaceId);
      } catch (err) {
        this.log(`could not forget ${workspaceId} (its caller forgets it): ${(err as Error).message}`);
      }
    }
    const last = this.mounts.size === 0;
    if (last) setImmediate(() => void this.shutdown('last mount ended'));
    return { outcome: 'Unmounted', discarded: discard && e.record.dirty };
  }

  /** Ends, with discard, the mounts whose owner is proven gone (daemon-orphans.ts). */
  private async endOrphans(): Promise<void> {
    if (this.stopping) return;
    for (const id of orphanedMounts(this.store, this.mounts.keys())) {
      const e = this.mounts.get(id);
      if (!e || e.committing || this.stopping) continue;
      this.log(`the owner of ${id} is gone: ending its mount`);
      await this.unmount(id, true, true).catch((err) => this.log(`ending ${id} failed: ${(err as Error).message}`));
    }
  }

  private async detachEntry(e: Entry): Promise<void> {
    try {
      await e.server.unmount();
    } catch (err) {
      this.log(`unmount of ${e.record.path} failed (${(err as Error).message}); detaching lazily`);
      await detach(e.record.path);
    }
    e.server.dispose();
    void removeSpoolDir(`${this.paths.spool}/${e.record.workspaceId}`, (d) => rmSync(d, { recursive: true, force: true }));
    this.mounts.delete(e.record.workspaceId);
    this.saveMounts();
    this.log(`unmounted ${e.record.workspaceId} from ${e.record.path}`);
  }

  private async stop(discard: boolean): Promise<StopOutcome> {
    const dirty: string[] = [];
    for (const e of [...this.mounts.values()]) {
      // A Workspace being committed has changes not stored yet: discarding aborts its commit.
      if (e.committing && !discard) dirty.push(e.record.workspaceId);
      else if (e.committing) await this.commits.abort(e);
      else if ((await this.stateOf(e)).changed) dirty.push(e.record.workspaceId);
    }
    if (dirty.length > 0 && !discard) return { outcome: 'Dirty', workspaces: dirty };
    const unmounted = [...this.mounts.keys()];
    setImmediate(() => void this.shutdown('stop requested'));
    return { outcome: 'Stopped', unmounted };
  }

  async shutdown(why: string): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.log(`stopping: ${why}`);
    if (this.orphanTimer) clearInterval(this.orphanTimer);
    endSpareWorker();
    for (const e of [...this.mounts.values()]) {
      // A commit in progress stops at its next record and stores nothing: a stop never waits
      // for a large commit to finish.
      if (e.committing) await this.commits.abort(e);
      await this.detachEntry(e).catch((err) => this.log(`detach failed: ${(err as Error).message}`));
    }
    const p = this.paths;
    const closed = new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    for (const c of this.conns) c.end();
    await closed;
    for (const f of [p.socket, p.token, p.mounts]) {
      try {
        unlinkSync(f);
      } catch {
        /* gone */
      }
    }
    // Every spool removal still running finishes before the daemon exits (so a caller that
    // removes the Store's directory after a stop does not race it); only a very large one
    // outlives the cap.
    void removeSpoolDir(p.spool, (d) => rmSync(d, { recursive: true, force: true }));
    await spoolRemovalsDone(SPOOL_REMOVAL_WAIT_MS);
    // The mounts are gone: the checkpointer their serving threads shared closes before the
    // daemon's own connection, which is then the last one (SQLite removes the WAL).
    endSharedCheckpoints();
    try {
      this.store?.close();
    } catch {
      /* closing anyway */
    }
    if (this.lockFd !== null) closeSync(this.lockFd);
    // Nothing should hold the loop any more, but be sure.
    setTimeout(() => process.exit(0), 50).unref();
  }
}

/** Runs a daemon for the Store at `storePath` in this process until it stops. */
export async function runDaemon(storePath: string): Promise<void> {
  const d = new Daemon(storePath);
  process.on('uncaughtException', (e) => d.log(`uncaught: ${e?.stack ?? String(e)}`));
  process.on('unhandledRejection', (e) => d.log(`unhandled rejection: ${(e as Error)?.stack ?? String(e)}`));
  let started: boolean;
  try {
    started = await d.start();
  } catch (e) {
    d.log(`cannot start: ${(e as Error)?.stack ?? String(e)}`);
    process.exitCode = 1;
    return;
  }
  if (!started) {
    d.log('another daemon already serves this Store');
    return;
  }
}
