/**
 * Checkpoints in the background for large commits. A write transaction of N bytes leaves about
 * N bytes of WAL, and SQLite's automatic checkpoint copies them into the database file inside
 * COMMIT: measured, that is about half of a 1 GiB import (docs/DESIGN.md, "Storage decisions").
 * For such commits the Store turns the automatic checkpoint off and asks this worker thread,
 * which has its own connection, for a PASSIVE checkpoint instead. Readers and the next writer go
 * on meanwhile (WAL mode allows one checkpointer beside them), and close() waits for it.
 *
 * Nothing about safety changes: the commit is in the WAL either way (and, with
 * synchronous=NORMAL, made durable by the checkpoint's sync either way); a crash before the
 * checkpoint leaves the frames in the WAL for the next connection to checkpoint.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

// Control words shared with the worker.
const REQUESTED = 0; // checkpoints asked for (a counter)
const DONE = 1; // the value of REQUESTED the last finished checkpoint covered
const CLOSE = 2; // 1: finish what was asked, close the connection, exit
const CLOSED = 3; // 1: the worker's connection is closed

/** Plain CommonJS, run without the TypeScript loader: the worker only needs better-sqlite3. */
const WORKER = `
const { workerData } = require('node:worker_threads');
const ctl = new Int32Array(workerData.ctl);
let db = null;
try {
  const Database = require(workerData.sqlite);
  for (;;) {
    const requested = Atomics.load(ctl, ${REQUESTED});
    if (requested !== Atomics.load(ctl, ${DONE})) {
      if (db === null) {
        db = new Database(workerData.path, { fileMustExist: true });
        db.pragma('busy_timeout = 30000');
      }
      try {
        db.pragma('wal_checkpoint(PASSIVE)');
      } catch {
        // Busy or read-only: the next checkpoint (or the last close) copies these frames.
      }
      Atomics.store(ctl, ${DONE}, requested);
      Atomics.notify(ctl, ${DONE});
      continue;
    }
    if (Atomics.load(ctl, ${CLOSE}) !== 0) break;
    Atomics.wait(ctl, ${REQUESTED}, requested);
  }
} finally {
  try {
    if (db !== null) db.close();
  } finally {
    Atomics.store(ctl, ${CLOSED}, 1);
    Atomics.notify(ctl, ${CLOSED});
  }
}
`;

/** How long close() waits for a running checkpoint before giving up on it (it is safe to abandon). */
const CLOSE_WAIT_MS = 10 * 60 * 1000;

export class Checkpointer {
  private worker: Worker | null = null;
  private readonly ctl = new Int32Array(new SharedArrayBuffer(16));

  constructor(private readonly path: string) {}

  /** Asks for a checkpoint of everything committed so far; returns at once. */
  request(): void {
    Atomics.add(this.ctl, REQUESTED, 1);
    Atomics.notify(this.ctl, REQUESTED);
    if (this.worker) return;
    const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(WORKER, { eval: true, execArgv: [], workerData: { path: this.path, sqlite, ctl: this.ctl.buffer } });
    // A process may exit with a checkpoint running: the frames stay in the WAL, nothing is lost.
    this.worker.unref();
    // Errors surface as a checkpoint not done; the last connection's close checkpoints instead.
    this.worker.on('error', () => undefined);
    // However it ended, close() must not wait for it.
    this.worker.on('exit', () => Atomics.store(this.ctl, CLOSED, 1));
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
    if (!this.worker) return;
    Atomics.store(this.ctl, CLOSE, 1);
    Atomics.notify(this.ctl, REQUESTED);
    const deadline = Date.now() + CLOSE_WAIT_MS;
    while (Atomics.load(this.ctl, CLOSED) === 0 && Date.now() < deadline) Atomics.wait(this.ctl, CLOSED, 0, 1000);
    this.worker = null;
  }
}
