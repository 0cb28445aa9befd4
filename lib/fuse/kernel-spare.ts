/**
 * Serving threads started ahead of need. A new thread loads the whole module graph (under tsx:
 * transpiles it) and opens its own Store connection before it can answer INIT, which cost
 * hundreds of ms of every fresh mount; so the daemon keeps one idle thread that has done all of
 * that, hands it the next mount's /dev/fuse descriptor, and starts the next one in the background.
 * At most one is idle per Store; it is ended with the daemon (endSpareWorker) and never keeps the
 * process alive on its own (unref'd until handed out).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type TransferListItem } from 'node:worker_threads';
import { LayerFsError } from '../errors.js';
import { Checkpointer } from '../store/checkpointer.js';
import { SPARE_YIELD_MIB, SPARE_YIELD_RECORDS } from './budget.js';

/**
 * What an idle serving thread is started with: the Store it opens while waiting, and the
 * control of the daemon's checkpointer for that Store (sharedCheckpoints).
 */
export interface SpareData {
  storePath: string;
  checkpoints?: SharedArrayBuffer;
}

/**
 * One WAL checkpointer per daemon: the serving thread of every mount commits with the automatic
 * checkpoint off (Store checkpointInBackground), and each used to start a checkpointing thread
 * and connection of its own (a worker thread: 5-7 MiB of the daemon's memory and a thread per
 * mount, docs/BENCHMARKS.md). They attach to this one instead, started on the daemon's thread.
 */
let shared: { storePath: string; checkpointer: Checkpointer } | null = null;

/** The control of the daemon's checkpointer for `storePath` (started at the first call), or undefined when it cannot run. */
export function sharedCheckpoints(storePath: string): SharedArrayBuffer | undefined {
  if (ended) return undefined;
  if (shared && shared.storePath !== storePath) return undefined; // one Store per daemon
  if (!shared) {
    try {
      const checkpointer = new Checkpointer(storePath);
      checkpointer.start();
      shared = { storePath, checkpointer };
    } catch {
      return undefined; // no thread: each serving thread starts its own
    }
  }
  return shared.checkpointer.alive ? shared.checkpointer.control : undefined;
}

/**
 * Closes the daemon's checkpointer once its mounts have ended (their Store connections are
 * closed or idle): what it was asked to checkpoint finishes first, then its connection closes.
 */
export function endSharedCheckpoints(): void {
  shared?.checkpointer.close();
  shared = null;
}

/**
 * Starts the serving-thread module `name` (kernel-worker, kernel-reader) beside this module:
 * `name`.js in dist/; from sources (under tsx) the thread registers tsx itself first, since
 * Node 20 workers do not inherit module hooks.
 */
export function startServingModule(name: string, workerData: unknown, transferList: TransferListItem[] = []): Worker {
  const js = new URL(`./${name}.js`, import.meta.url);
  if (existsSync(fileURLToPath(js))) return new Worker(js, { workerData, transferList });
  const ts = new URL(`./${name}.ts`, import.meta.url);
  if (!existsSync(fileURLToPath(ts))) throw new LayerFsError('ERR_NOT_FOUND', `${name} is missing beside kernel.js`, { hint: 'reinstall layerfs' });
  let api: string;
  try {
    api = import.meta.resolve('tsx/esm/api');
  } catch {
    throw new LayerFsError('ERR_NOT_FOUND', 'running from TypeScript sources needs tsx to start the serving thread');
  }
  const code = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(ts.href)}); })`;
  return new Worker(code, { eval: true, workerData, transferList });
}

function startWorker(storePath: string): Worker {
  const data: SpareData = { storePath, checkpoints: sharedCheckpoints(storePath) };
  return startServingModule('kernel-worker', data);
}

interface Idle {
  worker: Worker;
  storePath: string;
  /** Its modules are loaded and its Store open (it said `idle`). */
  loaded: boolean;
  drop: () => void;
}

/** Two at most: one finishing a mount's service and one started ahead. */
const MAX_IDLE = 2;
const idle: Idle[] = [];
let ended = false;

function keep(worker: Worker, storePath: string, loaded: boolean): void {
  worker.unref();
  const entry: Idle = { worker, storePath, loaded, drop: () => {} };
  // A thread that fails or exits while idle is dropped; the next mount starts its own.
  entry.drop = () => {
    const i = idle.indexOf(entry);
    if (i >= 0) idle.splice(i, 1);
  };
  const onMessage = (m: { type?: string }) => {
    if (m.type === 'idle') entry.loaded = true;
  };
  worker.on('message', onMessage).on('error', entry.drop).on('exit', entry.drop);
  idle.push(entry);
  // Over the bound: end a thread still loading before one that is ready.
  while (idle.length > MAX_IDLE) {
    const i = idle.findIndex((e) => !e.loaded);
    const [gone] = idle.splice(i >= 0 ? i : 0, 1);
    void gone!.worker.terminate();
  }
}

/** Commits under way that made the idle threads yield: none is started until the last ends. */
let yielding = 0;
/** Commits that made them yield since the daemon started (its status). */
let yielded = 0;

/** A bound of budget.ts, or the environment's (LAYERFS_SPARE_YIELD_MIB, _RECORDS: tests). */
function bound(name: string, fallback: number): number {
  const env = process.env[name];
  return env !== undefined && /^\d+$/.test(env) ? Number(env) : fallback;
}

/** The idle serving threads now (`loaded`: ready for a mount) and the commits that ended them. */
export function spareStats(): { idle: number; loaded: number; yielded: number } {
  return { idle: idle.length, loaded: idle.filter((e) => e.loaded).length, yielded };
}

function startSpare(storePath: string): void {
  if (ended || yielding > 0 || idle.some((e) => e.storePath === storePath)) return;
  keep(startWorker(storePath), storePath, false);
}

/**
 * Starts loading a serving thread for the Store at `storePath` now, before any mount asks for
 * one: the daemon does this first thing, so the first mount's thread loads its modules and opens
 * the Store while the daemon loads its own (the two overlap instead of adding up).
 */
export function prepareServingWorker(storePath: string): void {
  startSpare(storePath);
}

/**
 * A serving thread for a mount of the Store at `storePath`, waiting for its `start` message: an
 * idle one when there is one (a loaded one first), else a new one; when none is left idle the
 * next is started in the background.
 */
export function takeServingWorker(storePath: string): Worker {
  const mine = idle.filter((e) => e.storePath === storePath);
  const pick = mine.find((e) => e.loaded) ?? mine[0];
  let worker: Worker;
  if (pick) {
    pick.drop();
    worker = pick.worker;
    worker.removeAllListeners('message').removeAllListeners('error').removeAllListeners('exit');
    worker.ref();
  } else {
    worker = startWorker(storePath);
  }
  // After the caller's mount has gone ahead: a thread loading meanwhile would only slow it down.
  setTimeout(() => startSpare(storePath), 200).unref();
  return worker;
}

/**
 * Takes back a serving thread whose mount ended cleanly (it said `ended` and waits for the next
 * `start`): the next mount of this Store skips loading and opening altogether.
 */
export function releaseServingWorker(worker: Worker, storePath: string): void {
  worker.removeAllListeners('message').removeAllListeners('error').removeAllListeners('exit');
  if (ended) void worker.terminate();
  else keep(worker, storePath, true);
}

/**
 * Runs a commit of a mount of `storePath` that would write `records` records. When the daemon is
 * large as it starts (above SPARE_YIELD_MIB resident) and so is the change (at least
 * SPARE_YIELD_RECORDS), the idle serving threads end first and none is started before it ends:
 * the commit's peak is the daemon's, and an idle thread is a heap and a Store connection it does
 * not need. The next one is started after it.
 */
export async function yieldingSpares<T>(storePath: string, records: number, commit: () => Promise<T>): Promise<T> {
  if (records < bound('LAYERFS_SPARE_YIELD_RECORDS', SPARE_YIELD_RECORDS)) return commit();
  if (process.memoryUsage.rss() <= bound('LAYERFS_SPARE_YIELD_MIB', SPARE_YIELD_MIB) * 1048576) return commit();
  yielding++;
  yielded++;
  try {
    await Promise.all(idle.splice(0).map((e) => e.worker.terminate()));
    return await commit();
  } finally {
    if (--yielding === 0) setTimeout(() => startSpare(storePath), 200).unref();
  }
}

/**
 * Ends the idle serving threads and starts none until the returned release is called: while a
 * mount's prestore thread runs (prestore.ts), which holds about what a spare does, so the daemon
 * does not hold both through a large change.
 */
export function holdSpares(storePath: string): () => void {
  yielding++;
  yielded++;
  for (const e of idle.splice(0)) void e.worker.terminate();
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    if (--yielding === 0) setTimeout(() => startSpare(storePath), 200).unref();
  };
}

/** Ends the idle serving threads and starts no more (the daemon is stopping). */
export function endSpareWorker(): void {
  ended = true;
  for (const e of idle.splice(0)) void e.worker.terminate();
}
