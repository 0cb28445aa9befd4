/**
 * Storing a large change ahead of its commit. While rsync, a package manager or a build writes
 * thousands of files into a mount, the serving thread hands the files whose writers are done
 * (overlay-prestore.ts) to a thread of the mount's own (prestore-worker.ts), which stores their
 * content the way the commit would (commit-content.ts: read, cut, hash and compress, the previous
 * version offered as the delta base) on its own connection, at the lowest CPU priority. The commit
 * then takes each such file's content as stored, if it still holds, and stores the rest itself:
 * the stored state is the same either way, and only its time moves to where the cores were idle.
 *
 * The serving thread waits for the thread only when it ends it: at a commit's start (the job in
 * flight stops at its next file and its transaction rolls back, its results are taken, and the
 * commit runs alone), after PRESTORE_IDLE_END_MS without a job, and at the mount's end. Nothing
 * here is needed for correctness; LAYERFS_PRESTORE=0 turns it off.
 */
import { mallocTrim } from '../native/info.js';
import { receiveMessageOnPort, MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { PRESTORE_FILE_BYTES, PRESTORE_IDLE_END_MS, PRESTORE_JOB_BYTES, PRESTORE_JOB_FILES, PRESTORE_MIN_FILES, PRESTORE_QUIET_MS } from './budget.js';
import { startServingModule } from './kernel-spare.js';
import type { Overlay } from './overlay.js';
import type { PrestoreLimits } from './overlay-prestore.js';
import { PRESTORE_CELLS, PrestoreCell, type FromPrestore, type PrestoreData, type ToPrestore } from './prestore-wire.js';

const LIMITS: PrestoreLimits = { quietMs: PRESTORE_QUIET_MS, minFiles: PRESTORE_MIN_FILES, files: PRESTORE_JOB_FILES, bytes: PRESTORE_JOB_BYTES, fileBytes: PRESTORE_FILE_BYTES };
/** A job is looked for at most this often (ms): each look walks the released files that are quiet. */
const LOOK_MS = 5;
/** A commit waits at most this long for a stopped job to roll back (ms); a thread that never answers is let go. */
const STOP_WAIT_MS = 10_000;
/** After this many failed jobs in a row the mount stores nothing ahead any more. */
const MAX_FAILURES = 3;

/** Counts for the mount's state (diagnostics). */
export interface PrestoreCounts {
  jobs: number;
  files: number;
  bytes: number;
  stopped: number;
  failed: number;
  /** The thread's V8 heap and its memory outside it (Buffers, the addon's), MiB, at its last job, and the most seen. */
  heapMiB: number;
  externalMiB: number;
  peakMiB: number;
}

export class Prestore {
  private worker: Worker | null = null;
  private results: MessagePort | null = null;
  /** Shared with the thread; new with each thread, so one that ends late cannot touch the next one's. */
  private cells = new Int32Array(new SharedArrayBuffer(PRESTORE_CELLS * Int32Array.BYTES_PER_ELEMENT));
  private off = process.env.LAYERFS_PRESTORE === '0';
  private failures = 0;
  private nextLook = 0;
  /** When the last job was posted (performance.now()). */
  private lastJob = 0;
  /** The serials of the job posted last, until its result is taken. */
  private inFlight: number[] = [];
  readonly counts: PrestoreCounts = { jobs: 0, files: 0, bytes: 0, stopped: 0, failed: 0, heapMiB: 0, externalMiB: 0, peakMiB: 0 };

  constructor(
    private readonly storePath: string,
    private readonly checkpoints: SharedArrayBuffer | undefined,
    private readonly log: (message: string) => void,
  ) {}

  /**
   * After each request: takes what the thread stored, posts the next job when it is free, and
   * ends the thread once idle. True while the thread runs or files wait for it (the mount's
   * controller then wakes this thread when idle, and ends the daemon's spare serving threads).
   */
  tick(overlay: Overlay): boolean {
    if (this.off) return false;
    if (this.inFlight.length > 0) {
      if (Atomics.load(this.cells, PrestoreCell.Busy) !== 0) return true;
      this.take(overlay);
    }
    const now = performance.now();
    if (overlay.prestoreQueue < PRESTORE_MIN_FILES) {
      // Its heap and connection go back once it has had nothing to do for a while.
      if (this.worker !== null && now - this.lastJob >= PRESTORE_IDLE_END_MS) this.close();
      return this.worker !== null;
    }
    if (this.worker === null) this.start();
    const ready = Atomics.load(this.cells, PrestoreCell.Ready);
    if (ready === 2) {
      this.take(overlay);
      this.off = true;
    }
    if (ready !== 1) return !this.off;
    if (now < this.nextLook) return true;
    this.nextLook = now + LOOK_MS;
    const files = overlay.prestoreJob(now, LIMITS);
    if (files.length > 0) {
      this.inFlight = files.map((f) => f.serial);
      this.lastJob = now;
      Atomics.store(this.cells, PrestoreCell.Busy, 1);
      this.worker!.postMessage({ type: 'job', files } satisfies ToPrestore);
      this.counts.jobs++;
    }
    return true;
  }

  /**
   * Before a commit: the job in flight stops, what the thread stored is taken, and the thread
   * ends (its heap, some 40 MiB with its Store connection, would add to the commit's peak); the
   * next large change starts another. Nothing is posted until `resume`.
   */
  stopForCommit(overlay: Overlay): void {
    if (this.worker === null) return;
    Atomics.store(this.cells, PrestoreCell.Stop, 1);
    if (!this.waitWhile(PrestoreCell.Busy, 1)) {
      this.log(`the prestore thread did not stop within ${STOP_WAIT_MS} ms; nothing more is stored ahead on this mount`);
      this.off = true;
    }
    this.take(overlay);
    this.close();
    // The thread's C heap (its SQLite cache, its Buffers) was freed into an arena of its own,
    // which the commit's allocations on this thread do not reuse: it goes back to the system first.
    mallocTrim();
  }

  resume(): void {
    Atomics.store(this.cells, PrestoreCell.Stop, 0);
  }

  /** The thread closes its connection and ends; waits (at most STOP_WAIT_MS) until it has. */
  close(): void {
    if (this.worker === null) return;
    Atomics.store(this.cells, PrestoreCell.Stop, 1);
    this.worker.postMessage({ type: 'close' } satisfies ToPrestore);
    if (Atomics.load(this.cells, PrestoreCell.Ready) === 1) this.waitWhile(PrestoreCell.Ready, 1);
    this.worker.unref();
    this.results?.close();
    this.worker = null;
    this.results = null;
    this.inFlight = [];
  }

  /** Waits while cell `cell` holds `value`, at most STOP_WAIT_MS; false if it still does. */
  private waitWhile(cell: PrestoreCell, value: number): boolean {
    const deadline = performance.now() + STOP_WAIT_MS;
    while (Atomics.load(this.cells, cell) === value && performance.now() < deadline) Atomics.wait(this.cells, cell, value, 100);
    return Atomics.load(this.cells, cell) !== value;
  }

  private start(): void {
    this.cells = new Int32Array(new SharedArrayBuffer(PRESTORE_CELLS * Int32Array.BYTES_PER_ELEMENT));
    const { port1, port2 } = new MessageChannel();
    const data: PrestoreData = { storePath: this.storePath, cells: this.cells.buffer as SharedArrayBuffer, results: port2, ...(this.checkpoints ? { checkpoints: this.checkpoints } : {}) };
    this.results = port1;
    port1.unref();
    try {
      this.worker = startServingModule('prestore-worker', data, [port2]);
    } catch (e) {
      this.log(`the prestore thread did not start: ${(e as Error).message}`);
      this.off = true;
      return;
    }
    this.worker.unref();
    const cells = this.cells;
    this.worker.on('error', (e) => {
      this.log(`the prestore thread failed: ${e.message}`);
      this.off = true;
      Atomics.store(cells, PrestoreCell.Busy, 0);
    });
  }

  /** Takes the thread's results waiting on the port. */
  private take(overlay: Overlay): void {
    if (this.results === null) return;
    for (let m = receiveMessageOnPort(this.results); m; m = receiveMessageOnPort(this.results)) {
      const r = m.message as FromPrestore;
      overlay.prestoreDone(this.inFlight);
      this.inFlight = [];
      if (r.type === 'stopped') this.counts.stopped++;
      else if (r.type === 'failed') this.failed(r.message);
      else {
        this.failures = 0;
        this.counts.heapMiB = Math.round(r.heap / 1048576);
        this.counts.externalMiB = Math.round(r.external / 1048576);
        this.counts.peakMiB = Math.max(this.counts.peakMiB, this.counts.heapMiB + this.counts.externalMiB);
        for (const f of r.files) {
          const id = f.id === null ? null : Buffer.from(f.id.buffer, f.id.byteOffset, f.id.byteLength);
          overlay.acceptPrestored(f.serial, { form: f.form, id, size: f.size }, f.edit, f.base, r.epoch);
          this.counts.files++;
          this.counts.bytes += f.size;
        }
      }
    }
  }

  private failed(message: string): void {
    this.counts.failed++;
    this.log(`storing ahead of the commit failed: ${message}`);
    if (++this.failures >= MAX_FAILURES) {
      this.log(`${MAX_FAILURES} jobs failed in a row; nothing more is stored ahead on this mount`);
      this.off = true;
    }
  }
}
