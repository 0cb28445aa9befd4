/**
 * Reader threads of a kernel-backend mount: they answer READs of stored content that the
 * overlay shows unchanged, each with its own Store connection (and the last pack rows it read),
 * one file's READs on one reader while it can take them, so a large read
 * (row reads, decompression, the BLAKE3 re-hash of every chunk) never holds up the metadata
 * requests the serving thread answers meanwhile, and reads of several files run on several
 * threads (a row's decoding and verification is shared with the addon's pool threads).
 *
 * Why this is safe without locks around the overlay: the serving thread (kernel-worker.ts)
 * stays the only one that reads /dev/fuse and the only one that touches the overlay. It hands a
 * reader only what the reply needs — the request id, offset, length and the content's extent
 * tree root, an immutable content-addressed object — never a reference to overlay state. The
 * content is handed over only while the file has no written page, no truncation and no spool,
 * i.e. its bytes are exactly those stored objects. A WRITE or truncate of the file that arrives
 * later was sent while this READ was still unanswered, so the two are concurrent and either
 * order is a correct answer (and the kernel keeps its page cache consistent: the pages of a READ
 * in flight are locked). A commit never changes a stored object either. Replies are written to
 * the same descriptor the request was read from (the kernel matches them by id on it).
 *
 * Each reader has a single-producer single-consumer ring in shared memory: the serving thread
 * cannot take messages while it sleeps in read(2), and a reader waits in Atomics.wait, so both
 * sides only touch shared integers. A ring is drained before the serving thread reports its
 * mount ended: only then may the daemon close the descriptor (whose number may be reused).
 */
import { availableParallelism } from 'node:os';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { startServingModule } from './kernel-spare.js';
import type { StoredContent } from './content.js';

/** Requests one ring holds; a power of two (indices wrap with the 32-bit counters). */
export const RING = 64;
/** Shared integers of a ring: the producer's count, the consumer's, stop, state. */
export const TAIL = 0;
export const HEAD = 1;
export const STOP = 2;
export const STATE = 3;
/** STATE values: loading, serving, gone (failed or stopped). */
export const LOADING = 0;
export const SERVING = 1;
export const GONE = 2;
/** Files whose reader is remembered (ReaderPool.home). */
const HOMES = 256;
/** Float64 fields of a slot, then the 32-byte content id. */
export const SLOT_F64 = 6;
export const SLOT_BYTES = SLOT_F64 * 8 + 32;
/** Slot kinds: a READ, or "take the notifications posted on your port" (kernel-notify.ts). */
export const KIND_READ = 0;
export const KIND_NOTIFY = 1;

export interface ReaderData {
  storePath: string;
  ctl: SharedArrayBuffer;
  slots: SharedArrayBuffer;
  notes: MessagePort;
}

interface Reader {
  worker: Worker;
  ctl: Int32Array;
  f64: Float64Array;
  bytes: Uint8Array;
  notes: MessagePort;
  /** A notification batch is queued or being sent: no READ is queued behind it. */
  notifying: boolean;
}

/**
 * Reader threads of a mount: LAYERFS_FUSE_READERS, else the cores (at most 4). With 0 the
 * serving thread answers every READ itself, and one thread is still started for notifications.
 */
export function readerSetup(): { threads: number; handReads: boolean } {
  const env = process.env.LAYERFS_FUSE_READERS;
  const n = env !== undefined && /^\d+$/.test(env) ? Math.min(16, Number(env)) : Math.min(4, Math.max(1, availableParallelism()));
  return { threads: Math.max(1, n), handReads: n > 0 };
}

/** The reader threads of one serving thread (kept across its mounts of one Store). */
export class ReaderPool {
  private readonly readers: Reader[] = [];
  /** The reader each recently read file's READs go to (home()), by content id. */
  private readonly homes = new Map<string, number>();
  private nextHome = 0;

  constructor(
    readonly storePath: string,
    count: number,
  ) {
    for (let i = 0; i < count; i++) {
      const ctl = new SharedArrayBuffer(4 * 4);
      const slots = new SharedArrayBuffer(RING * SLOT_BYTES);
      const { port1, port2 } = new MessageChannel();
      const data: ReaderData = { storePath, ctl, slots, notes: port2 };
      const worker = startServingModule('kernel-reader', data, [port2]);
      // This thread mostly sleeps in read(2): readers never keep it (or the daemon) alive.
      worker.unref();
      port1.unref();
      this.readers.push({ worker, ctl: new Int32Array(ctl), f64: new Float64Array(slots), bytes: new Uint8Array(slots), notes: port1, notifying: false });
    }
  }

  private load(r: Reader): number {
    return (Atomics.load(r.ctl, TAIL) - Atomics.load(r.ctl, HEAD)) | 0;
  }

  /** A serving reader with room, the least loaded first; undefined when none (the caller serves the READ itself). */
  private pick(): Reader | undefined {
    let best: Reader | undefined;
    let bestLoad = RING;
    for (const r of this.readers) {
      if (Atomics.load(r.ctl, STATE) !== SERVING) continue;
      if (r.notifying) {
        if (this.load(r) > 0) continue;
        r.notifying = false;
      }
      const load = this.load(r);
      if (load < bestLoad) {
        best = r;
        bestLoad = load;
      }
    }
    return best;
  }

  /**
   * The reader a file's READs go to while it can take them: consecutive READs of one file share
   * pack rows (a 1 MiB READ ends in the row the next one starts in, and each reader keeps the
   * last rows it read), so one file on one reader reads each row once, where spreading its READs
   * over readers read most rows twice. Different files go to different readers; a row's
   * decoding and verification is shared with the addon's pool threads either way.
   */
  private home(id: Buffer): Reader | undefined {
    const key = id.toString('latin1');
    let at = this.homes.get(key);
    if (at === undefined) {
      // New files take the readers in turn: two files read at once are read on two threads.
      at = this.nextHome++ % this.readers.length;
      this.homes.set(key, at);
      if (this.homes.size > HOMES) this.homes.delete(this.homes.keys().next().value!);
    }
    const r = this.readers[at];
    if (!r || Atomics.load(r.ctl, STATE) !== SERVING || this.load(r) >= RING) return undefined;
    if (r.notifying) {
      if (this.load(r) > 0) return undefined;
      r.notifying = false;
    }
    return r;
  }

  private push(r: Reader, fill: (f64: Float64Array, at: number) => void, kind: number): void {
    const tail = Atomics.load(r.ctl, TAIL);
    const slot = tail & (RING - 1);
    const at = (slot * SLOT_BYTES) / 8;
    fill(r.f64, at);
    r.f64[at + 5] = kind;
    Atomics.store(r.ctl, TAIL, (tail + 1) | 0);
    Atomics.notify(r.ctl, TAIL);
  }

  /**
   * Hands one READ of unchanged stored content to a reader, which answers it on `fd`; false when
   * no reader can take it now.
   */
  read(fd: number, unique: number, offset: number, size: number, content: StoredContent): boolean {
    const r = this.home(content.id!) ?? this.pick();
    if (!r) return false;
    this.push(
      r,
      (f, at) => {
        f[at] = unique;
        f[at + 1] = offset;
        f[at + 2] = size;
        f[at + 3] = content.size;
        f[at + 4] = fd;
        r.bytes.set(content.id!, (at + SLOT_F64) * 8);
      },
      KIND_READ,
    );
    return true;
  }

  /**
   * Has a reader write these notifications to `fd` (kernel-notify.ts says why never this thread)
   * and waits up to `waitMs` for them to be written; no READ is queued behind them. Returns
   * whether they were written by then (else they are on their way: a process holding a lock the
   * kernel needs for them is waiting for this thread to answer). A reader still loading is
   * waited for first (it loads once per serving thread).
   */
  notify(fd: number, messages: Buffer[], waitMs = 200): boolean {
    let r = this.pick();
    for (const until = performance.now() + 10_000; !r && this.readers.some((x) => Atomics.load(x.ctl, STATE) === LOADING) && performance.now() < until; r = this.pick()) {
      Atomics.wait(this.readers[0]!.ctl, STATE, LOADING, 20);
    }
    if (!r) return false;
    r.notes.postMessage(messages);
    r.notifying = true;
    this.push(r, (f, at) => (f[at + 4] = fd), KIND_NOTIFY);
    const mine = Atomics.load(r.ctl, TAIL);
    const until = performance.now() + waitMs;
    for (;;) {
      const head = Atomics.load(r.ctl, HEAD);
      if (((mine - head) | 0) <= 0) return true;
      const left = until - performance.now();
      if (left <= 0 || Atomics.load(r.ctl, STATE) === GONE) return false;
      Atomics.wait(r.ctl, HEAD, head, left);
    }
  }

  /** Waits until every handed request is answered (bounded: a reader stuck in a dead connection fails fast). */
  drain(timeoutMs = 10_000): void {
    const until = performance.now() + timeoutMs;
    for (const r of this.readers) {
      for (;;) {
        const head = Atomics.load(r.ctl, HEAD);
        if (head === Atomics.load(r.ctl, TAIL) || Atomics.load(r.ctl, STATE) === GONE || performance.now() > until) break;
        Atomics.wait(r.ctl, HEAD, head, 50);
      }
    }
  }

  /** Readers that answer READs now. */
  get serving(): number {
    return this.readers.filter((r) => Atomics.load(r.ctl, STATE) === SERVING).length;
  }

  /** Stops the readers (after drain: nothing is in flight). */
  close(): void {
    for (const r of this.readers) {
      Atomics.store(r.ctl, STOP, 1);
      Atomics.notify(r.ctl, TAIL);
      r.notes.close();
      void r.worker.terminate();
    }
    this.readers.length = 0;
  }
}
