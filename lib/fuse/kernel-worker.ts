/**
 * The serving thread of one kernel-backend mount (see kernel.ts): it owns the Workspace's
 * Overlay and its own Store connection, and loops: read one request from /dev/fuse (blocking
 * this thread only), answer it. Messages from the daemon (commit, state) are taken between two
 * requests, so a commit is a consistent cut and requests that arrive meanwhile wait in the
 * kernel's queue. Never touches a mount synchronously except by serving it. READs of unchanged
 * stored content go to reader threads (kernel-readers.ts), and so do the kernel notifications
 * after the overlay moved onto changes made elsewhere (kernel-notify.ts).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { LayerFsError } from '../errors.js';
import { fdWrite, RequestReader, type HeldRequest } from '../native/fd.js';
import { mallocStats } from '../native/info.js';
import { ContentForm, Store } from '../store/index.js';
import { ContentCache } from './content.js';
import { CHUNK_CACHE_BYTES, HELD_REQUESTS, PAGE_CACHE_BYTES, SERVING_CACHE_KIB, SETTLE_AFTER_MS } from './budget.js';
import { KernelProtocol, type FromWorker, type StartWorker, type ToWorker } from './kernel.js';
import { invalidations } from './kernel-notify.js';
import { SpinGate } from './kernel-spin.js';
import { LoopTurns } from './loop-turns.js';
import { activityCells, countRequest, notePending, notePrestore, settledNow, stillQuiet } from './quiet-settle.js';
import { passthrough } from './kernel-passthrough.js';
import { Prestore } from './prestore.js';
import { readerSetup, ReaderPool } from './kernel-readers.js';
import { IN_HDR, Op, READ_ONLY_OPS, r64 } from './kernel-wire.js';
import type { SpareData } from './kernel-spare.js';
import { wireChanges, wireOutcome } from './outcome.js';
import { changedMarker } from './protocol.js';
import { Overlay } from './overlay.js';
import { CommitCell } from './overlay-commit.js';
import { deferSpoolRemoval, spoolFactory, spoolTrashDue, spoolTrashSize, takeSpoolTrash } from './spool.js';
import { spoolReserve } from './spool-reserve.js';

const port = parentPort!;
const post = (m: FromWorker) => port.postMessage(m);
const log = (message: string) => post({ type: 'log', message });
const hex = (h: string) => Buffer.from(h, 'hex');
const E = constants.errno;
const errnoName = (e: number) => Object.entries(E).find(([, v]) => v === e)?.[0] ?? `errno ${e}`;

/** Closed spool files are removed by the daemon's thread (spool.ts): many at a time, or a large one at once. */
function discardSpools(): void {
  if (spoolTrashDue()) post({ type: 'discard', files: takeSpoolTrash() });
}

/**
 * The daemon's messages that came while the serving loop gave its event loop a turn (loop-turns.ts):
 * the port's listener takes them then, and answerMessages answers them first, in order.
 */
const inbox: ToWorker[] = [];

/** Answers the daemon's messages waiting on the port (commit, changes, counts), between requests; true when one was a commit. */
function answerMessages(store: Store, fd: number, overlay: Overlay, proto: KernelProtocol, marker: string, reader: RequestReader): boolean {
  discardSpools();
  let committed = false;
  for (;;) {
    const m = inbox.shift() ?? (receiveMessageOnPort(port)?.message as ToWorker | undefined);
    if (!m) return committed;
    try {
      let value: unknown;
      if (m.type === 'commit') {
        value = commitMount(store, fd, overlay, proto, marker, reader, m);
        committed = true;
      } else if (m.type === 'changes') {
        value = wireChanges(overlay.changes());
      } else if (m.type === 'settle') {
        // The mount went quiet after a burst (quiet-settle.ts): settled after this turn, unless requests came since.
        const quiet = stillQuiet(activity, m.seen);
        settleDue ||= quiet;
        value = { settled: quiet };
      } else if (m.type === 'writers') {
        value = overlay.writablePaths();
      } else {
        value = { changed: overlay.changed, pending: overlay.pending(), openHandles: overlay.openHandles, committing: false, requests: requestCounts(proto) };
      }
      post({ type: 'result', id: m.id, ok: true, value });
      if (spoolTrashSize() > 0) post({ type: 'discard', files: takeSpoolTrash() });
    } catch (e) {
      const err = e instanceof LayerFsError ? { code: e.code, message: e.message, details: e.toJSON() } : { code: 'ERR_NATIVE', message: (e as Error)?.message ?? String(e) };
      if (!(e instanceof LayerFsError)) log(`${m.type} failed: ${(e as Error)?.stack ?? String(e)}`);
      post({ type: 'result', id: m.id, ok: false, error: err });
    }
  }
}

/** A commit of the mount, between two requests (answerMessages): the prestore thread stops meanwhile. */
function commitMount(store: Store, fd: number, overlay: Overlay, proto: KernelProtocol, marker: string, reader: RequestReader, m: ToWorker & { type: 'commit' }): unknown {
  const t0 = performance.now();
  const a0 = store.meter.allocatedGrowth;
  const from = overlay.rootId;
  memoryNote('commit start', m.cells);
  prestore?.stopForCommit(overlay);
  let out: ReturnType<Overlay['commitSync']>;
  try {
    out = overlay.commitSync(m.note, m.strict, m.cells, () => {
      serveDuringCommit(store.path, fd, overlay, proto, reader);
      memoryNote('commit', m.cells, 1000);
    });
  } finally {
    prestore?.resume();
  }
  memoryNote('commit end', m.cells);
  settleDue ||= performance.now() - t0 >= SETTLE_AFTER_MS;
  if ((out.outcome === 'Created' && out.reconciled) || (out.outcome === 'UpToDate' && !out.rootId.equals(from))) forgetMoved(store, fd, from, overlay.rootId);
  if (!overlay.changed) rmSync(marker, { force: true });
  return { outcome: wireOutcome(out, store.meter.allocatedGrowth - a0), changed: overlay.changed };
}

/** The mount's request counts, for its state (diagnostics). */
function requestCounts(proto: KernelProtocol): Record<string, number> {
  const requests = proto.requestCounts();
  requests.READ_ON_READER_THREADS = handed;
  requests.ANSWERED_DURING_COMMIT = answeredDuringCommit;
  requests.HELD_DURING_COMMIT = heldDuringCommit;
  requests.HELD_PEAK_DURING_COMMIT = heldPeak;
  requests.COMMIT_READS_STOPPED = readsStopped;
  if (prestore) for (const [k, v] of Object.entries(prestore.counts)) requests[`PRESTORE_${k.toUpperCase()}`] = v;
  return requests;
}

/** After each request answered here: what it freed goes now, and the controller sees the size of the next commit. */
function afterRequest(overlay: Overlay): void {
  // The request may have closed a large spool (an unlink, a FORGET): its space goes now, not
  // when the next request comes.
  discardSpools();
  notePending(activity, overlay.pendingRecords);
  if (prestore) notePrestore(activity, prestore.tick(overlay));
}

async function serve(store: Store, { fd, params, activity: cells }: StartWorker): Promise<void> {
  activity = cells;
  let proto: KernelProtocol | null = null;
  const marker = changedMarker(params.spoolDir);
  const overlay = new Overlay(
    store,
    hex(params.rootId),
    { branchId: hex(params.branchId), expectedHead: params.expectedHead ? hex(params.expectedHead) : null, expectedBase: hex(params.expectedBase), workspaceId: params.workspaceId ? hex(params.workspaceId) : null },
    {
      // Spool files are made ahead by the daemon's thread (spool-reserve.ts).
      spool: spoolFactory(params.spoolDir, spoolReserve(post)),
      cache: new ContentCache(store.objects, { chunkBytes: CHUNK_CACHE_BYTES }),
      ...(params.memoryBudget === undefined ? {} : { memoryBudget: params.memoryBudget }),
      onChange: () => {
        try {
          writeFileSync(marker, '');
        } catch (e) {
          log(`could not mark uncommitted changes: ${(e as Error).message}`);
        }
        post({ type: 'dirty' });
      },
      retain: (serial) => proto?.retains(serial) ?? false,
    },
  );
  const send = (b: Buffer, len: number): void => {
    const n = fdWrite(fd, b, len);
    // ENOENT: the request was interrupted and is gone.
    if (n < 0 && n !== -E.ENOENT) log(`reply to /dev/fuse failed: ${errnoName(-n)}`);
  };
  proto = new KernelProtocol(overlay, send, { ...params.protocol, log });
  proto.forgetEntries = (notes) => {
    if (!readers(params.storePath).notify(fd, notes)) log('a kernel entry invalidation was not written before the request was answered');
  };
  passthrough.attach(fd);
  // Requests are read into the addon's buffers: a large WRITE's payload goes to the write-behind
  // thread as it lies (native/request_pool.h).
  const reader = new RequestReader();
  const spin = new SpinGate();
  const turns = new LoopTurns();
  let toReader = false;
  const messages = (): boolean => answerMessages(store, fd, overlay, proto!, marker, reader);
  /** Answers request `req` and the daemon's messages; true when one of them was a commit. */
  const onRequest = (req: Buffer): boolean => {
    // A wake-up (or any request that only reads) is answered before the daemon's messages: one
    // left waiting through a commit keeps its name's lookup open in the kernel, and lookups in
    // that directory then wait too. Others are answered after them, as before.
    countRequest(activity);
    const wake = KernelProtocol.isWake(req, req.length);
    const first = wake || READ_ONLY_OPS.has(req.readUInt32LE(4));
    if (wake) proto!.wakeReply(req);
    else if (first) proto!.handle(req);
    const committed = messages();
    toReader = !first && answer(params.storePath, fd, overlay, proto!, req);
    afterRequest(overlay);
    spin.tick();
    // Requests held during a commit come after the one read before it.
    if (held.length > 0) answerHeld(params.storePath, fd, overlay, proto!, reader);
    return committed;
  };
  try {
    for (;;) {
      // Polled for only after a request this thread answered: the next READ of a file a reader
      // thread serves comes when that reader has answered, long after any poll.
      const n = reader.read(fd, !toReader);
      if (n < 0) {
        if (n === -E.EINTR || n === -E.EAGAIN || n === -E.ENOENT) continue;
        if (n !== -E.ENODEV && n !== -E.EBADF) log(`read from /dev/fuse failed: ${errnoName(-n)}`);
        break; // the connection is gone (unmounted or aborted)
      }
      if (n <= 0) {
        const committed = messages();
        if (held.length > 0) answerHeld(params.storePath, fd, overlay, proto, reader);
        // Woken with nothing to read: a commit's objects, or the last requests', free their native state now.
        if (committed || settleDue || turns.idleDue()) await afterTurn(turns, committed);
        continue;
      }
      const committed = onRequest(reader.buffer.subarray(0, n));
      if (turns.count() || committed || settleDue) await afterTurn(turns, committed);
      if (!proto.initialized) continue;
      if (!ready) {
        ready = true;
        post({ type: 'ready' });
      }
    }
  } finally {
    // Held requests of a connection that is gone are never answered: their buffers go back.
    for (const h of held.splice(0)) reader.release(h);
    // Every READ handed out is answered before the daemon may close (and reuse) the descriptor.
    pool?.drain();
    if (passthrough.stopped) log(passthrough.stopped);
    passthrough.detach();
    overlay.dispose();
  }
}

/**
 * A commit at least this long (the last one answered), or a quiet spell after a burst of
 * requests (quiet-settle.ts), is followed by LoopTurns.settle.
 */
let settleDue = false;
/** The requests this thread answered, shared with its controller (quiet-settle.ts). */
let activity = activityCells();

/** A turn of the thread's event loop, then the settle when one is due. */
async function afterTurn(turns: LoopTurns, committed: boolean): Promise<void> {
  await turns.turn();
  if (committed) memoryNote('commit end, after a turn', undefined);
  if (settleDue) await settle(turns, committed);
}

/** What a long commit or a burst of requests left goes back to the system (LoopTurns.settle). */
async function settle(turns: LoopTurns, afterCommit: boolean): Promise<void> {
  settleDue = false;
  if (!afterCommit) memoryNote('quiet after a burst', undefined);
  const t = performance.now();
  const rss = process.memoryUsage.rss();
  await turns.settle();
  settledNow(activity);
  const ms = (performance.now() - t).toFixed(0);
  memoryNote(`${afterCommit ? 'commit end' : 'quiet after a burst'}, settled in ${ms} ms`, undefined);
  const mib = (b: number) => (b / 1048576).toFixed(0);
  if (!afterCommit) log(`quiet after a burst of requests: settled in ${ms} ms, resident ${mib(rss)} -> ${mib(process.memoryUsage.rss())} MiB`);
}

const memoryLog = process.env.LAYERFS_DAEMON_MEMORY === '1';
let memoryAt = 0;

/**
 * With LAYERFS_DAEMON_MEMORY=1, logs (daemon.log) the process's resident set, this thread's V8
 * heap and Buffers, and glibc's heap, at most once per `everyMs` (diagnostics of a commit's memory).
 */
function memoryNote(what: string, cells: Int32Array | undefined, everyMs = 0): void {
  if (!memoryLog) return;
  const now = performance.now();
  if (now - memoryAt < everyMs) return;
  memoryAt = now;
  const m = process.memoryUsage();
  const c = mallocStats();
  const mib = (b: number) => (b / 1048576).toFixed(1);
  const steps = cells ? Atomics.load(cells, CommitCell.Done) : 0;
  log(`memory ${what}: steps ${steps} rss ${mib(m.rss)} heapUsed ${mib(m.heapUsed)} heapTotal ${mib(m.heapTotal)} external ${mib(m.external)} arrayBuffers ${mib(m.arrayBuffers)}${c ? ` malloc arena ${mib(c.arena)} mmap ${mib(c.mmap)} inUse ${mib(c.inUse)} free ${mib(c.free)}` : ''} MiB`);
}

/** Requests read during a commit that change the overlay: answered, in order, once it is over (each in its request buffer). */
const held: HeldRequest[] = [];
/** At most this many are held (budget.ts HELD_REQUESTS; LAYERFS_FUSE_HELD=N sets another bound). */
const heldMax = heldBound();
/** Requests answered during commits of this mount, and held until their end (diagnostics: the mount's state). */
let answeredDuringCommit = 0;
let heldDuringCommit = 0;
/** The most requests held at once, and how often reading stopped because heldMax were held (diagnostics). */
let heldPeak = 0;
let readsStopped = 0;

function heldBound(): number {
  const env = process.env.LAYERFS_FUSE_HELD;
  return env !== undefined && /^\d+$/.test(env) ? Math.min(1024, Number(env)) : HELD_REQUESTS;
}

/**
 * Between two steps of a commit (overlay-commit.ts stepper): answers the requests waiting on
 * /dev/fuse that only read the overlay (lookups, attributes, listings, READs a reader thread
 * takes), so metadata requests do not wait for a large commit; a request that would change the
 * overlay (or READ a changed file) stays in its request buffer and is answered after the commit,
 * in order, so the commit stays a consistent cut of the state it started from and every write
 * lands after it. Once heldMax requests are held it reads no more (what follows waits in the
 * kernel's queue until the commit's end), so held requests never take more than heldMax request
 * buffers. Never waits: returns when nothing more is waiting, or after 64 requests.
 */
function serveDuringCommit(storePath: string, fd: number, overlay: Overlay, proto: KernelProtocol, reader: RequestReader): void {
  for (let i = 0; i < 64; i++) {
    if (held.length >= heldMax) {
      readsStopped++;
      return;
    }
    const r = reader.readReady(fd);
    if (r === -E.EINTR || r === -E.ENOENT) continue;
    if (typeof r === 'number') return;
    const req = r.request;
    let keep = false;
    try {
      if (KernelProtocol.isWake(req, req.length)) proto.wakeReply(req);
      else if (handReads && handOver(storePath, fd, overlay, req)) answeredDuringCommit++;
      // Requests read together were sent together: answering one before another held is an order the kernel allows.
      else if (READ_ONLY_OPS.has(req.readUInt32LE(4))) {
        proto.handle(req);
        answeredDuringCommit++;
      } else {
        keep = true;
        held.push(r);
        heldDuringCommit++;
        if (held.length > heldPeak) heldPeak = held.length;
      }
    } finally {
      if (!keep) reader.release(r);
    }
  }
}

/** Answers a request: a READ of stored content by a reader thread where one takes it (true), else here. */
function answer(storePath: string, fd: number, overlay: Overlay, proto: KernelProtocol, req: Buffer): boolean {
  if (handReads && handOver(storePath, fd, overlay, req)) return true;
  proto.handle(req);
  return false;
}

/** Answers the requests held during a commit, in the order they came (serveDuringCommit), and gives their buffers back. */
function answerHeld(storePath: string, fd: number, overlay: Overlay, proto: KernelProtocol, reader: RequestReader): void {
  while (held.length > 0) {
    const h = held.shift()!;
    try {
      answer(storePath, fd, overlay, proto, h.request);
    } finally {
      reader.release(h);
    }
  }
}

/**
 * The overlay moved onto a state with changes the kernel has not seen (a reconciling commit, or
 * the head moved under an unchanged Workspace): a reader thread tells the kernel to forget what
 * it cached of them (kernel-notify.ts), before the commit is answered unless a process holds
 * a lock the kernel needs for that (then just after).
 */
function forgetMoved(store: Store, fd: number, from: Buffer, to: Buffer): void {
  const notes = invalidations(store, from, to);
  if (notes.length > 0 && !readers(store.path).notify(fd, notes)) post({ type: 'log', message: `${notes.length} kernel cache invalidations were not written before the commit answered` });
}

/**
 * A READ of a file whose content is unchanged stored objects goes to a reader thread
 * (kernel-readers.ts); true when one took it. Small files (one blob) are answered here: handing
 * them over costs about what reading them does.
 */
function handOver(storePath: string, fd: number, overlay: Overlay, req: Buffer): boolean {
  if (req.readUInt32LE(4) !== Op.READ) return false;
  const content = overlay.unchangedContent(r64(req, IN_HDR));
  if (!content || content.form !== ContentForm.Extents || content.id?.length !== 32) return false;
  if (!readers(storePath).read(fd, r64(req, 8), r64(req, IN_HDR + 8), req.readUInt32LE(IN_HDR + 16), content)) return false;
  handed++;
  return true;
}

/**
 * This thread's reader threads, started on first need (a READ to hand over, or invalidations to
 * send) rather than with every mount: a mount that never reads a large file (most tool calls)
 * does not pay for loading them. Kept across mounts of the Store, as the thread's Store is.
 */
function readers(storePath: string): ReaderPool {
  if (pool && pool.storePath !== storePath) {
    pool.close();
    pool = null;
  }
  pool ??= new ReaderPool(storePath, readerSetup().threads);
  return pool;
}

let ready = false;
let pool: ReaderPool | null = null;
/** This mount's prestore thread (prestore.ts), started when a large change is written. */
let prestore: Prestore | null = null;
/** READs handed to reader threads during this mount (diagnostics: the mount's state). */
let handed = 0;
const { handReads } = readerSetup();
deferSpoolRemoval();
// Started ahead of need (kernel-spare.ts): the modules are loaded and the Store is open before
// the mount exists; each `start` message says which mount to serve, and after a clean end the
// thread waits for the next one (kernel-spare.ts takes it back).
const { storePath, checkpoints } = workerData as SpareData;
let store: Store | null = null;
try {
  store = Store.open(storePath, { cacheKiB: SERVING_CACHE_KIB, mapStreams: false, pageCacheBytes: PAGE_CACHE_BYTES });
} catch {
  /* opened again below, where a failure is reported */
}
/** Whether a mount is being served (its messages that come during a loop turn go to the inbox). */
let serving = false;
/** Mounts are served one after another, as the messages that start them came. */
let mounts: Promise<void> = Promise.resolve();
port.on('message', (m: StartWorker | ToWorker) => {
  if (m.type === 'start') mounts = mounts.then(() => startMount(m));
  else if (serving) inbox.push(m);
  // Else a request for a mount that has ended: the daemon has failed it already.
});

async function startMount(m: StartWorker): Promise<void> {
  ready = false;
  try {
    if (store && m.params.storePath !== storePath) {
      store.close();
      store = null;
    }
    store ??= Store.open(m.params.storePath, { cacheKiB: SERVING_CACHE_KIB, mapStreams: false, pageCacheBytes: PAGE_CACHE_BYTES });
    if (pool && pool.storePath !== m.params.storePath) {
      pool.close();
      pool = null;
    }
    handed = 0;
    answeredDuringCommit = 0;
    heldDuringCommit = 0;
    heldPeak = 0;
    readsStopped = 0;
    // Commits of this mount never checkpoint inside COMMIT (store.ts checkpointInBackground):
    // the daemon's checkpointer does, one for all its mounts (kernel-spare.ts sharedCheckpoints).
    store.checkpointInBackground(undefined, m.params.storePath === storePath ? checkpoints : undefined);
    serving = true;
    prestore = new Prestore(store.path, m.params.storePath === storePath ? checkpoints : undefined, log);
    await serve(store, m);
  } catch (e) {
    post({ type: 'fatal', message: (e as Error)?.stack ?? String(e) });
    pool?.close();
    store?.close();
    port.close(); // not reused: the thread ends
    return;
  } finally {
    serving = false;
    inbox.length = 0;
    prestore?.close();
    prestore = null;
  }
  post({ type: 'ended' });
}
post({ type: 'idle' });

