/**
 * A Store handle: one SQLite connection, authenticated object reads (the read side:
 * store-read.ts), and write transactions in which objects land first and history rows last.
 */
import { LayerFsError } from '../errors.js';
import { Checkpointer, type CheckpointLimits } from './checkpointer.js';
import { ObjectWriter } from './object-writer.js';
import type { GcOptions, GcStats } from './gc.js';
import type { RepackOptions, RepackStats } from './repack.js';
import { gcEpoch } from './gc-epoch.js';
import { releaseMaintenance, takeMaintenance, type MaintenanceClaim } from './maintenance-lease.js';
import { mapSqliteError } from './sqlite-errors.js';
import { createStoreFile, openStoreFile, prepared, type Db, type OpenOptions, type StoreInfo } from './store-file.js';
import { LAZY_TABLES, type LazyTable } from './schema.js';
import { ReadStore } from './store-read.js';
import { WalBound } from './wal-bound.js';

/** The longest pause between two tries for the write lock while another process holds it (Store.write). */
const LOCK_POLL_MS = 4;
/** Transactions that stored at least this much leave their checkpoint to the background. */
const BACKGROUND_CHECKPOINT_BYTES = 32 * 1024 * 1024;
/** SQLite's automatic checkpoint limit (its default), for a connection whose checkpointer has gone. */
const AUTO_CHECKPOINT_FRAMES = 1000;

export class Store extends ReadStore {
  private writing = false;
  private closed = false;
  private checkpointer: Checkpointer | undefined;
  /** Commits leave every checkpoint to the checkpointer (checkpointInBackground). */
  private background = false;
  /** Small commits of a handle without a checkpointer keep the WAL file bounded (wal-bound.ts). */
  readonly walBound: WalBound;
  /**
   * Sums over this handle's write transactions, so a receipt can take differences. Allocated
   * growth is measured inside each transaction (after BEGIN IMMEDIATE, before COMMIT) while
   * the write lock is held, so other processes' writes can never be counted in it. `stale`:
   * staged writes that went stale (writeStaged), which their callers then wrote again.
   */
  readonly meter = { allocatedGrowth: 0, transactions: 0, stale: 0 };

  private constructor(db: Db, info: StoreInfo, pageCacheBytes?: number) {
    super(db, info, pageCacheBytes);
    this.walBound = new WalBound(db, `${info.path}-wal`);
  }

  static create(path: string): Store {
    const info = createStoreFile(path);
    return Store.open(info.path);
  }

  static open(path: string, opts: OpenOptions = {}): Store {
    const { db, info } = openStoreFile(path, opts);
    return new Store(db, info, opts.pageCacheBytes);
  }

  /**
   * Runs `fn` in one write transaction (BEGIN IMMEDIATE: the write lock is taken up front, so a
   * later statement cannot fail with SQLITE_BUSY halfway). Either everything `fn` wrote becomes
   * visible at COMMIT, or nothing does.
   */
  async write<T>(fn: (w: ObjectWriter) => Promise<T> | T): Promise<T> {
    if (this.writing) throw new LayerFsError('ERR_BUSY', 'a write is already running on this Store handle');
    this.writing = true; // held while waiting for the lock, so no other write of this handle starts meanwhile
    try {
      // The lock is usually free: taken at once, `fn` starts in this same turn of the event loop.
      const waiting = this.lockForWrite();
      if (waiting) await waiting;
    } catch (e) {
      this.writing = false;
      throw e;
    }
    return this.transaction(fn, true, true);
  }

  /**
   * A write whose objects are made before the write lock is taken, so that other processes'
   * writes go on meanwhile: `stage` runs outside any transaction with a staging writer, whose
   * rows wait in memory (hashing, compression, deltas and tree pages are done there); then,
   * under the lock, they are written if nothing they rely on changed meanwhile
   * (ObjectWriter.applyStaged) and `publish` runs in the same transaction, as in write().
   * Undefined when the stage went stale: nothing was written, and the caller writes again.
   * For small writes: what is staged is held in memory until the lock is taken.
   */
  async writeStaged<S, T>(stage: (w: ObjectWriter) => Promise<S>, publish: (w: ObjectWriter, staged: S) => Promise<T> | T): Promise<{ value: T } | undefined> {
    if (this.writing) throw new LayerFsError('ERR_BUSY', 'a write is already running on this Store handle');
    this.writing = true;
    const w = new ObjectWriter(this.db, this.path, this.objects, true);
    let staged: S;
    try {
      this.pages.writer = w;
      staged = await stage(w);
      w.flush();
      const waiting = this.lockForWrite();
      if (waiting) await waiting;
    } catch (e) {
      // Pages and blobs the reader remembered (page-io, keepWritten) were never written.
      this.forgetWritten();
      this.endWrite();
      throw mapSqliteError(e, this.path);
    }
    const out = await this.transaction(async (tw) => (tw.applyStaged() ? { value: await publish(tw, staged) } : undefined), true, true, w);
    if (!out) {
      this.forgetWritten();
      this.meter.stale++;
    }
    return out;
  }

  /**
   * Takes the write lock (BEGIN IMMEDIATE): at once, returning nothing, or a promise that waits
   * for another process's (waitForWriteLock). Errors are SQLite's, mapped.
   */
  private lockForWrite(): Promise<void> | undefined {
    let busy: unknown;
    try {
      busy = this.tryBeginImmediate();
    } catch (e) {
      throw mapSqliteError(e, this.path);
    }
    if (busy === undefined) return undefined;
    return this.waitForWriteLock(busy).catch((e: unknown) => {
      throw mapSqliteError(e, this.path);
    });
  }

  /**
   * One try for the write lock, without SQLite's busy handler for this statement alone (whatever
   * else uses the connection keeps the usual timeout): undefined once taken, else the SQLITE_BUSY
   * error of another process holding it.
   */
  private tryBeginImmediate(): unknown {
    const timeout = this.pragmaValue('busy_timeout');
    this.pragmaValue('busy_timeout = 0');
    try {
      prepared(this.db, 'BEGIN IMMEDIATE').run();
      return undefined;
    } catch (e) {
      if (String((e as { code?: unknown }).code).startsWith('SQLITE_BUSY')) return e;
      throw e;
    } finally {
      this.pragmaValue(`busy_timeout = ${timeout}`);
    }
  }

  /**
   * Waits for another process's write lock in short steps (LOCK_POLL_MS) up to the connection's
   * busy timeout, then throws the last SQLITE_BUSY (ERR_BUSY, as before). SQLite's own busy
   * handler sleeps ever longer (up to 100 ms a try), so with several writers the lock often stood
   * free while every waiter slept; an async wait also lets this process go on meanwhile.
   */
  private async waitForWriteLock(busy: unknown): Promise<void> {
    const deadline = performance.now() + this.pragmaValue('busy_timeout');
    for (let attempt = 0; performance.now() < deadline; attempt++) {
      // 1 ms at first, then up to LOCK_POLL_MS, with jitter so waiters do not retry in step.
      await new Promise((r) => setTimeout(r, Math.min(LOCK_POLL_MS, 1 + attempt) * (0.5 + Math.random())));
      busy = this.tryBeginImmediate();
      if (busy === undefined) return;
    }
    throw busy;
  }

  /**
   * Makes one of LAZY_TABLES (with its indexes) if missing, as part of the running write
   * transaction (a rollback takes it away again with the rows written to it).
   */
  createTable(name: LazyTable): void {
    if (!this.hasTable(name)) this.db.exec(LAZY_TABLES[name]);
  }

  /**
   * The gc epoch as this connection sees it now (inside a write transaction: as of it): content
   * stored unpublished at one epoch may be published at the same epoch only (gc-epoch.ts).
   */
  gcEpoch(): number {
    return gcEpoch(this.db);
  }

  /** Synchronous variant for short history updates. */
  writeSync<T>(fn: (w: ObjectWriter) => T): T {
    return this.transaction(fn, false) as T;
  }

  /**
   * writeSync if the write lock is free at once; undefined, with nothing run, when another
   * connection holds it, this handle is writing, or the Store is open read-only. For writes that
   * may be skipped and must never wait (a status refreshing its stat cache).
   */
  tryWriteSync<T>(fn: (w: ObjectWriter) => T): { value: T } | undefined {
    if (this.writing || this.db.readonly || this.tryBeginImmediate() !== undefined) return undefined;
    return { value: this.transaction(fn, false, true) as T };
  }

  /**
   * The one frame of `write` and `writeSync`: this handle's one writer, BEGIN IMMEDIATE (already
   * taken by `write` when `begun`), the
   * allocation baseline, then COMMIT after `fn` (after the promise it returns settles, when
   * `awaitResult`), or ROLLBACK and the object cache dropped on any error.
   */
  private transaction<T>(fn: (w: ObjectWriter) => Promise<T> | T, awaitResult: boolean, begun = false, staged?: ObjectWriter): Promise<T> | T {
    if (this.writing && !begun) throw new LayerFsError('ERR_BUSY', 'a write is already running on this Store handle');
    this.writing = true;
    let pending = false; // a returned promise ends the frame when it settles
    try {
      const w = staged ?? new ObjectWriter(this.db, this.path, this.objects);
      if (!begun) this.exec('BEGIN IMMEDIATE');
      const a0 = this.allocatedBytes();
      this.pages.writer = w;
      const result = fn(w);
      if (!awaitResult || !(result instanceof Promise)) return this.commitWrite(w, a0, result);
      pending = true;
      return result
        .then((value) => this.commitWrite(w, a0, value))
        .catch((e: unknown) => {
          throw this.abortWrite(e);
        })
        .finally(() => this.endWrite());
    } catch (e) {
      throw this.abortWrite(e);
    } finally {
      if (!pending) this.endWrite();
    }
  }

  private commitWrite<R>(w: ObjectWriter, allocated0: number, result: R): R {
    w.flush();
    this.commit(w, allocated0);
    return result;
  }

  /** Drops the read caches, which may name objects a write did not leave in the Store. */
  private forgetWritten(): void {
    this.objects.reset();
    this.runs?.reset();
  }

  /** Rolls back and drops the object cache; returns the error to throw (SQLite's mapped). */
  private abortWrite(e: unknown): unknown {
    try {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      this.forgetWritten();
    } catch (rollback) {
      return mapSqliteError(rollback, this.path);
    }
    return mapSqliteError(e, this.path);
  }

  /** Gives the maintenance lease back; a failure leaves it to this process, whose end frees it. */
  private release(token: string): void {
    try {
      this.writeSync(() => releaseMaintenance(this.db, token));
    } catch {
      // The lease names this process: another pass can take it once this process is gone.
    }
  }

  private endWrite(): void {
    this.pages.endWrite();
    this.writing = false;
  }

  /**
   * Rewrites the pack rows for size with slow compression settings, in bounded transactions,
   * then VACUUMs (repack.ts). Ids and content never change.
   */
  async repack(opts: RepackOptions = {}, claim?: MaintenanceClaim): Promise<RepackStats> {
    // Loaded on first use: a process that only reads never loads the maintenance passes.
    const { repackStore } = await import('./repack.js');
    return this.maintain(() => repackStore(this, opts), 'repack', claim);
  }

  /**
   * Deletes the objects the states `opts.roots()` names do not reach, in bounded transactions,
   * safe against concurrent writers and crashes (gc.ts). With `claim`, gc and repack run one at
   * a time on the Store (maintenance-lease.ts); a dry run changes nothing and takes no lease.
   */
  async gc(opts: GcOptions, claim?: MaintenanceClaim): Promise<GcStats> {
    const { collectGarbage } = await import('./gc.js');
    return this.maintain(() => collectGarbage(this, opts), 'gc', opts.dryRun ? undefined : claim);
  }

  /** Runs a maintenance pass (its own bounded transactions) as this handle's one writer, holding the Store's maintenance lease if `claim`ed. */
  private async maintain<T>(pass: () => Promise<T>, name: string, claim?: MaintenanceClaim): Promise<T> {
    if (this.writing || this.db.inTransaction) throw new LayerFsError('ERR_BUSY', 'a write is already running on this Store handle');
    return this.leased(name, claim, false, async () => {
      this.writing = true;
      try {
        return await pass();
      } finally {
        this.forgetWritten();
        this.writing = false;
      }
    });
  }

  /**
   * Runs `fn` (a fetch or push: objects stored in several transactions and published at the
   * end) holding the maintenance lease shared: gc and repack refuse meanwhile, and it refuses
   * while either runs (ERR_BUSY, maintenance-lease.ts).
   */
  sharingMaintenance<T>(pass: string, claim: MaintenanceClaim, fn: () => Promise<T>): Promise<T> {
    return this.leased(pass, claim, true, fn);
  }

  /** Runs `fn` holding the maintenance lease for `pass` if `claim`ed; a read-only handle takes none (its pass refuses in its own words). */
  private async leased<T>(pass: string, claim: MaintenanceClaim | undefined, shared: boolean, fn: () => Promise<T>): Promise<T> {
    const token = claim && !this.db.readonly ? this.writeSync(() => takeMaintenance(this.db, this.path, pass, claim, shared)) : undefined;
    try {
      return await fn();
    } finally {
      if (token) this.release(token);
    }
  }

  private exec(sql: string): void {
    this.db.exec(sql);
  }

  /**
   * COMMIT. After a large transaction the WAL is large too, and copying it into the database is
   * left to the background checkpointer instead of being done inside COMMIT (checkpointer.ts);
   * small commits keep SQLite's automatic checkpoint. `allocated0` is allocatedBytes() taken
   * right after BEGIN IMMEDIATE: the difference is this transaction's growth alone.
   */
  private commit(w: ObjectWriter, allocated0: number): void {
    const growth = this.allocatedBytes() - allocated0;
    this.commitSql(w);
    this.meter.allocatedGrowth += growth;
    this.meter.transactions++;
  }

  private commitSql(w: ObjectWriter): void {
    if (this.background && !this.checkpointer!.alive) {
      // Its worker is gone: this connection checkpoints for itself again.
      this.background = false;
      this.db.pragma(`wal_autocheckpoint = ${AUTO_CHECKPOINT_FRAMES}`);
    }
    if (this.background) {
      // The automatic checkpoint is off on this connection: COMMIT only appends to the WAL.
      this.exec('COMMIT');
      this.afterCommit(w.stats.bytesInserted >= BACKGROUND_CHECKPOINT_BYTES);
      return;
    }
    if (w.stats.bytesInserted < BACKGROUND_CHECKPOINT_BYTES) {
      this.exec('COMMIT');
      this.walBound.afterCommit();
      return;
    }
    const pages = this.db.pragma('wal_autocheckpoint', { simple: true }) as number;
    this.db.pragma('wal_autocheckpoint = 0');
    try {
      this.exec('COMMIT');
    } finally {
      this.db.pragma(`wal_autocheckpoint = ${pages}`);
    }
    this.afterCommit(true);
  }

  /** The background checkpointer hears of a commit (`now`: checkpoint at once, a large one). */
  private afterCommit(now: boolean): void {
    try {
      this.checkpointer ??= new Checkpointer(this.path);
      if (now) this.checkpointer.request();
      else this.checkpointer.committed();
    } catch {
      // No worker (out of threads or memory): the commit stands; checkpoint here instead.
      this.db.pragma('wal_checkpoint(PASSIVE)');
    }
  }

  /**
   * For a long-lived handle whose commits are latency-bound (the mount daemon's): its connection
   * never checkpoints inside COMMIT; a worker thread of its own does, off the commit's path, once
   * the WAL holds enough frames or the handle goes quiet, and truncates a WAL file one large
   * commit left large (checkpointer.ts, docs/DECISIONS.md "Small commits checkpoint off their
   * path too"). The worker starts now, so the first commit does not pay for its start. Given
   * `shared` (another thread's Checkpointer.control, on this Store file), its worker does it
   * instead: the mount daemon runs one for all its mounts.
   */
  checkpointInBackground(limits?: CheckpointLimits, shared?: SharedArrayBuffer): void {
    if (this.background) return;
    this.db.pragma('wal_autocheckpoint = 0');
    this.background = true;
    this.checkpointer?.close();
    this.checkpointer = shared ? Checkpointer.attach(this.path, shared) : new Checkpointer(this.path, limits);
    this.checkpointer.start();
  }

  override close(): void {
    if (this.closed) return;
    this.closed = true;
    // Its connection closes first, so ours is the last one and SQLite removes the WAL.
    this.checkpointer?.close();
    super.close();
  }
}
