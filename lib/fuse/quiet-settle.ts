/**
 * A mount that goes quiet after a burst of requests gives back what the burst left. A serving
 * thread waits for requests in read(2), so V8's memory reducer (tasks on the thread's event loop)
 * never runs there: after a large change that is not committed (an rsync of a release, an
 * install), the idle daemon kept the burst's garbage and glibc's free pages for as long as the
 * mount lived. A commit is followed by a settle already (kernel-worker.ts); this covers the
 * burst without one.
 *
 * The serving thread counts the requests it answers in shared cells; the mount's controller (the
 * daemon's thread, whose event loop does run) looks at the count every SETTLE_QUIET_MS / 4, and
 * once SETTLE_BURST_REQUESTS or more came since the last settle and none for SETTLE_QUIET_MS, it
 * asks the serving thread to settle (LoopTurns.settle). The thread settles only if nothing but
 * that message's own wake-up came since the controller looked.
 */
import { performance } from 'node:perf_hooks';
import { SETTLE_BURST_REQUESTS, SETTLE_QUIET_MS } from './budget.js';

/** The cells a serving thread and its controller share (Int32Array indices). */
export enum Activity {
  /** Requests the serving thread answered (wrapping). */
  Requests = 0,
  /** The count of Requests when the thread last settled (after a commit or a quiet spell). */
  SettledAt = 1,
  /**
   * The records the mount's next commit would write (changed and deleted inodes), as of the
   * thread's last request: the controller sizes a commit without asking (kernel-spare.ts).
   */
  Pending = 2,
  /**
   * 1 while the mount's prestore thread runs or files wait for it (prestore.ts): the serving
   * thread looks for the next job, and ends an idle thread, only when a request wakes it, so a
   * mount left idle meanwhile is woken by its controller every SETTLE_QUIET_MS / 4.
   */
  Prestore = 3,
}

export function activityCells(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(4 * Int32Array.BYTES_PER_ELEMENT));
}

/** The serving thread's side: whether files wait to be stored ahead. */
export function notePrestore(cells: Int32Array, waiting: boolean): void {
  Atomics.store(cells, Activity.Prestore, waiting ? 1 : 0);
}

/** The serving thread's side: what its next commit would write now. */
export function notePending(cells: Int32Array, records: number): void {
  Atomics.store(cells, Activity.Pending, Math.min(records, 0x7fffffff));
}

/** The controller's side: the records the mount's next commit would write, as last noted. */
export function pendingRecords(cells: Int32Array): number {
  return Atomics.load(cells, Activity.Pending);
}

/** Requests between two counts of a wrapping counter. */
function since(now: number, then: number): number {
  return (now - then) | 0;
}

/** The serving thread's side: one more request answered. */
export function countRequest(cells: Int32Array): void {
  Atomics.add(cells, Activity.Requests, 1);
}

/**
 * The serving thread's side, when asked to settle with the count its controller saw: true when
 * at most the request that woke it came since.
 */
export function stillQuiet(cells: Int32Array, seen: number): boolean {
  return since(Atomics.load(cells, Activity.Requests), seen) <= 1;
}

/** The serving thread's side, once it has settled (after a quiet spell or a long commit). */
export function settledNow(cells: Int32Array): void {
  Atomics.store(cells, Activity.SettledAt, Atomics.load(cells, Activity.Requests));
}

/** The controller's side: calls `settle(seen)` when the mount went quiet after a burst. */
export class QuietWatch {
  private seen: number;
  private quietSince = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly cells: Int32Array,
    private readonly settle: (seen: number) => void,
    private readonly busy: () => boolean,
    private readonly wake: () => void = () => {},
    /** Told at every look whether the mount's prestore thread runs (Activity.Prestore). */
    private readonly prestoring: (on: boolean) => void = () => {},
  ) {
    this.seen = Atomics.load(cells, Activity.Requests);
    this.timer = setInterval(() => this.check(), SETTLE_QUIET_MS / 4).unref();
  }

  private check(): void {
    const n = Atomics.load(this.cells, Activity.Requests);
    const now = performance.now();
    this.prestoring(Atomics.load(this.cells, Activity.Prestore) !== 0);
    if (n !== this.seen) {
      this.seen = n;
      this.quietSince = now;
      return;
    }
    if (Atomics.load(this.cells, Activity.Prestore) !== 0 && !this.busy()) {
      this.wake();
      return;
    }
    if (now - this.quietSince < SETTLE_QUIET_MS || since(n, Atomics.load(this.cells, Activity.SettledAt)) < SETTLE_BURST_REQUESTS || this.busy()) return;
    // Asked once per burst: an ask the thread refuses (requests came meanwhile) still starts the
    // count of the next burst, and the ask's wake-up counts as a request.
    Atomics.store(this.cells, Activity.SettledAt, n);
    this.settle(n);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
