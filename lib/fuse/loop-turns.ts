/**
 * Turns of a thread's event loop, given now and then by a thread that answers requests in a
 * synchronous loop (a mount's serving thread, its reader threads). Node 20 runs Node-API
 * finalizers — which free the native state of the addon's objects once they are collected: a
 * started run of a streamed read, a copy-on-write file, a chunk stream, a hasher — from the
 * thread's event loop (an immediate), never during the collection itself. A thread that never
 * returns to its loop keeps every such object's native memory for as long as it lives: a mount
 * daemon's resident set grew by ~0.5 MiB per GiB of cold reads without bound, even once a started
 * run freed most of its state when waited for (~3.5 MiB per GiB before that; docs/BENCHMARKS.md,
 * "The mount daemon's native memory and its threads' event loops").
 */
import { performance } from 'node:perf_hooks';
import { mallocTrim } from '../native/info.js';

/** Requests between two turns, at most. */
const TURN_EVERY = 256;

/** A thread that went idle gives its loop a turn if it answered anything this long after the last turn, ms. */
const IDLE_TURN_MS = 50;

/** V8's full collection, where the process exposes it (the mount daemon runs with --expose-gc). */
const collect = (globalThis as { gc?: () => void }).gc;

export class LoopTurns {
  private since = 0;
  private at = performance.now();

  /** Counts one request answered; true when a turn is due (TURN_EVERY requests since the last). */
  count(): boolean {
    return ++this.since >= TURN_EVERY;
  }

  /** Whether a thread about to wait for work should give its loop a turn first (it answered requests, and not just now). */
  idleDue(): boolean {
    return this.since > 0 && performance.now() - this.at >= IDLE_TURN_MS;
  }

  /**
   * What a large piece of work (a commit of a whole tree) left, given back to the system: full
   * collections, each followed by a turn (the finalizers of the native objects found dead run
   * there, and V8 releases the pages it emptied), then glibc's free pages. A thread that waits
   * in read(2) between requests never runs V8's own memory reducer, so without this an idle
   * daemon kept what a whole-tree commit left resident for as long as it lived (327 MiB for 40 s
   * and on).
   */
  async settle(): Promise<void> {
    // Twice, a turn after each: the second finds the heap small and lets V8 shrink what it keeps.
    collect?.();
    await this.turn();
    collect?.();
    await this.turn();
    mallocTrim();
  }

  /** One turn of the event loop: resolves once the loop has run its immediates (queued finalizers among them). */
  turn(): Promise<void> {
    this.since = 0;
    this.at = performance.now();
    return new Promise((resolve) => setImmediate(resolve));
  }
}
