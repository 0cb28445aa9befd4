/**
 * Checkpoints in the background. A write transaction of N bytes leaves about N bytes of WAL, and
 * SQLite's automatic checkpoint copies them into the database file inside COMMIT: measured, that
 * is about half of a 1 GiB import (docs/DESIGN.md, "Storage decisions"), and for a small commit
 * the one in ~50 that passes the WAL limit pays the whole copy and two fsyncs (docs/DECISIONS.md,
 * "Small commits checkpoint off their path too").
 *
 * A worker thread with its own connection runs the checkpoints instead:
 * - request(): a PASSIVE checkpoint of everything committed so far, now (after a large commit);
 * - committed(): a commit happened on a handle whose automatic checkpoint is off (Store
 *   `checkpointInBackground`); while commits come the worker looks every POLL_MS and
 *   checkpoints PASSIVE once the WAL holds at least WAL_FRAMES_LIMIT frames not yet copied, and
 *   once IDLE_POLLS looks found no new commit it copies what is left;
 * - after a checkpoint that copied everything, a WAL file larger than WAL_BYTES_LIMIT (the WAL is
 *   reused from its start, never shrunk, so one large commit would keep it large) is truncated
 *   by a TRUNCATE checkpoint that waits at most TRUNCATE_WAIT_MS for the write lock and readers
 *   (tried again once quiet, when readers kept it from it).
 * Readers and the next writer go on meanwhile (WAL mode allows one checkpointer beside them),
 * and close() waits for a requested checkpoint.
 *
 * Nothing about safety changes: the commit is in the WAL either way (and, with
 * synchronous=NORMAL, made durable by the checkpoint's sync either way); a crash before the
 * checkpoint leaves the frames in the WAL for the next connection to checkpoint.
 */
import { createRequire } from 'node:module';
import { endianness } from 'node:os';
import { Worker } from 'node:worker_threads';

// Control words shared with the worker.
const REQUESTED = 0; // checkpoints asked for (a counter)
const DONE = 1; // the value of REQUESTED the last finished checkpoint covered
const CLOSE = 2; // 1: finish what was asked, close the connection, exit
const CLOSED = 3; // 1: the worker's connection is closed
const WAKE = 4; // bumped by every call that gives the worker something to look at
const COMMITTED = 5; // commits made with the automatic checkpoint off (a counter)
const SLEEPING = 6; // 1: the worker waits for a wake-up, nothing left to look at
const WORDS = 7;

/** WAL frames not yet copied that make the worker checkpoint at once: SQLite's own automatic limit. */
export const WAL_FRAMES_LIMIT = 1000;
/** While commits come, the worker looks at the WAL this often (a commit never wakes it then). */
export const POLL_MS = 500;
/** Polls without a commit after which the worker checkpoints what is left (the handle is quiet). */
export const IDLE_POLLS = 4;
/** A WAL file larger than this is truncated once everything in it was copied. */
export const WAL_BYTES_LIMIT = 64 * 1024 * 1024;
/** How long a TRUNCATE checkpoint may hold up the next writer (it takes the write lock). */
const TRUNCATE_WAIT_MS = 20;

/**
 * Plain CommonJS, run without the TypeScript loader: the worker only needs better-sqlite3. The
 * frames not yet copied are read from the wal-index header (the -shm file, whose layout is
 * fixed across SQLite versions: https://www.sqlite.org/walformat.html): mxFrame at byte 16,
 * nBackfill at byte 96, both in native byte order.
 */
const WORKER = `
const fs = require('node:fs');
const { workerData } = require('node:worker_threads');
const ctl = new Int32Array(workerData.ctl);
const le = workerData.le;
let db = null;
let shm = -1;
const head = Buffer.alloc(100);
function uncopied() {
  try {
    if (shm < 0) shm = fs.openSync(workerData.path + '-shm', 'r');
    if (fs.readSync(shm, head, 0, 100, 0) < 100) return Infinity;
    const max = le ? head.readUInt32LE(16) : head.readUInt32BE(16);
    const backfilled = le ? head.readUInt32LE(96) : head.readUInt32BE(96);
    return max > backfilled ? max - backfilled : 0;
  } catch {
    return Infinity;
  }
}
function walBytes() {
  try {
    return fs.statSync(workerData.path + '-wal').size;
  } catch {
    return 0;
  }
}
function checkpoint() {
  if (db === null) {
    db = new Database(workerData.path, { fileMustExist: true });
    db.pragma('busy_timeout = 30000');
  }
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    if (r && r.busy === 0 && r.log === r.checkpointed && walBytes() > workerData.walBytesLimit) {
      db.pragma('busy_timeout = ${TRUNCATE_WAIT_MS}');
      try {
        db.pragma('wal_checkpoint(TRUNCATE)');
      } finally {
        db.pragma('busy_timeout = 30000');
      }
    }
  } catch {
    // Busy or read-only: the next checkpoint (or the last close) copies these frames.
  }
}
let Database = null;
try {
  Database = require(workerData.sqlite);
  let seen = 0; // the counter starts at 0 with the Checkpointer: commits made while this thread started count
  let quiet = -1; // polls without a commit since the last one (-1: nothing left to copy)
  for (;;) {
    const wake = Atomics.load(ctl, ${WAKE});
    const requested = Atomics.load(ctl, ${REQUESTED});
    if (requested !== Atomics.load(ctl, ${DONE})) {
      checkpoint();
      quiet = -1;
      Atomics.store(ctl, ${DONE}, requested);
      Atomics.notify(ctl, ${DONE});
      continue;
    }
    if (Atomics.load(ctl, ${CLOSE}) !== 0) break;
    const committed = Atomics.load(ctl, ${COMMITTED});
    if (committed !== seen) {
      // Commits since the last look: checkpoint once the WAL holds enough, look again soon.
      seen = committed;
      quiet = 0;
      if (uncopied() >= workerData.framesLimit) checkpoint();
    } else if (quiet >= 0 && ++quiet >= workerData.idlePolls) {
      // Quiet for a while: copy what is left, so the next burst of commits starts with none
      // (and try again to truncate a large WAL file: readers may have kept it from it before).
      quiet = -1;
      if (uncopied() > 0 || walBytes() > workerData.walBytesLimit) checkpoint();
      continue;
    }
    if (quiet >= 0) {
      Atomics.wait(ctl, ${WAKE}, wake, workerData.pollMs);
      continue;
    }
    // Nothing left: sleep until the next commit or request wakes this thread (committed()).
    Atomics.store(ctl, ${SLEEPING}, 1);
    if (Atomics.load(ctl, ${COMMITTED}) === seen) Atomics.wait(ctl, ${WAKE}, wake);
    Atomics.store(ctl, ${SLEEPING}, 0);
  }
} finally {
  try {
    if (db !== null) db.close();
    if (shm >= 0) fs.closeSync(shm);
  } finally {
    Atomics.store(ctl, ${CLOSED}, 1);
    Atomics.notify(ctl, ${CLOSED});
  }
}
`;

/** How long close() waits for a running checkpoint before giving up on it (it is safe to abandon). */
const CLOSE_WAIT_MS = 10 * 60 * 1000;

export interface CheckpointLimits {
  framesLimit?: number;
  pollMs?: number;
  idlePolls?: number;
  walBytesLimit?: number;
}

export class Checkpointer {
  private worker: Worker | null = null;
  private readonly ctl: Int32Array;
  /** A handle on another thread's checkpointer (`Checkpointer.attach`): it starts and closes nothing. */
  private readonly attached: boolean;

  constructor(
    private readonly path: string,
    private readonly limits: CheckpointLimits = {},
    control?: SharedArrayBuffer,
  ) {
    this.attached = control !== undefined;
    this.ctl = new Int32Array(control ?? new SharedArrayBuffer(WORDS * Int32Array.BYTES_PER_ELEMENT));
  }

  /**
   * A handle on the checkpointer whose `control` this is, running on another thread (the mount
   * daemon's, shared by the connections of its serving threads: one worker and one connection
   * per daemon, not one per mount). Its calls reach that worker; start() and close() leave it
   * to its owner. All connections must be to the same Store file.
   */
  static attach(path: string, control: SharedArrayBuffer): Checkpointer {
    return new Checkpointer(path, {}, control);
  }

  /** What `Checkpointer.attach` takes on another thread. */
  get control(): SharedArrayBuffer {
    return this.ctl.buffer as SharedArrayBuffer;
  }

  /** Asks for a checkpoint of everything committed so far; returns at once. */
  request(): void {
    Atomics.add(this.ctl, REQUESTED, 1);
    this.wake();
  }

  /** Tells the worker a commit happened with the automatic checkpoint off; returns at once. */
  committed(): void {
    Atomics.add(this.ctl, COMMITTED, 1);
    // A worker that polls sees the count; only a sleeping one is woken (a wake-up is a thread
    // switch, which on a busy machine delays the commit's answer).
    if ((this.worker || this.attached) && Atomics.compareExchange(this.ctl, SLEEPING, 1, 0) !== 1) return;
    this.wake();
  }

  private wake(): void {
    Atomics.add(this.ctl, WAKE, 1);
    Atomics.notify(this.ctl, WAKE);
    this.start();
  }

  /** Starts the worker unless it runs (it then waits for the first call); an attached handle's owner starts it. */
  start(): void {
    if (this.worker || this.attached) return;
    const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
    const workerData = {
      path: this.path,
      sqlite,
      ctl: this.ctl.buffer,
      le: endianness() === 'LE',
      framesLimit: this.limits.framesLimit ?? WAL_FRAMES_LIMIT,
      pollMs: this.limits.pollMs ?? POLL_MS,
      idlePolls: this.limits.idlePolls ?? IDLE_POLLS,
      walBytesLimit: this.limits.walBytesLimit ?? WAL_BYTES_LIMIT,
    };
    this.worker = new Worker(WORKER, { eval: true, execArgv: [], workerData });
    // A process may exit with a checkpoint running: the frames stay in the WAL, nothing is lost.
    this.worker.unref();
    // Errors surface as a checkpoint not done; the last connection's close checkpoints instead.
    this.worker.on('error', () => undefined);
    // However it ended, close() must not wait for it.
    this.worker.on('exit', () => Atomics.store(this.ctl, CLOSED, 1));
  }

  /** False once the worker has ended without being asked to (it failed to start or to open the Store). */
  get alive(): boolean {
    // An attached handle outlives nothing: once its owner closed the worker, it is gone.
    if (this.attached) return Atomics.load(this.ctl, CLOSED) === 0;
    return Atomics.load(this.ctl, CLOSED) === 0 || Atomics.load(this.ctl, CLOSE) !== 0;
  }

  /** Whether every requested checkpoint has finished. */
  get idle(): boolean {
    return Atomics.load(this.ctl, DONE) === Atomics.load(this.ctl, REQUESTED);
  }

  /**
   * Lets requested checkpoints finish and closes the worker's connection, synchronously (Store
   * close() is synchronous), so the Store's own connection is the last one and SQLite removes
   * the WAL when it closes.
   */
  close(): void {
    if (!this.worker) return; // never started, or attached (its owner closes it)
    Atomics.store(this.ctl, CLOSE, 1);
    Atomics.add(this.ctl, WAKE, 1);
    Atomics.notify(this.ctl, WAKE);
    const deadline = performance.now() + CLOSE_WAIT_MS;
    while (Atomics.load(this.ctl, CLOSED) === 0 && performance.now() < deadline) Atomics.wait(this.ctl, CLOSED, 0, 1000);
    this.worker = null;
  }
}
