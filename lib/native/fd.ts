/**
 * read(2)/write(2) for a loop that serves a device (the FUSE serving thread): a failure is
 * returned as -errno, never thrown, since errors such as EINTR or ENOENT are routine there.
 */
import { invalidArgument, LayerFsError } from '../errors.js';
import { constants } from 'node:os';
import { native, type FuseSpinStats } from './binding.js';

const E_AGAIN = constants.errno.EAGAIN;

/** Reads once into `buffer`: the bytes read, or -errno. Blocks the calling thread. */
export function fdRead(fd: number, buffer: Uint8Array): number {
  return native.fdRead(fd, buffer);
}

/** A request read by RequestReader.readReady: its bytes lie in a request buffer of its own until released. */
export interface HeldRequest {
  readonly slot: number;
  /** The request's bytes (a view of the request buffer, valid until release). */
  readonly request: Buffer;
}

/**
 * Reads FUSE requests into the addon's request buffers (native/request_pool.h), so that the
 * write-behind can take a large WRITE's payload as it lies instead of copying it. `buffer` is the
 * last request `read`; it stays valid until the next `read` (the write-behind holds its own
 * claim). A request taken with `readReady` keeps a buffer of its own until `release`: one read
 * path and one set of buffers whether a request is answered at once or held. One reader per thread.
 */
export class RequestReader {
  /** The buffer the last request was read into (its first `read()` bytes). */
  buffer: Buffer = Buffer.alloc(0);
  private readonly slots: Buffer[] = [];

  /** Reads one request from `fd`: the bytes read (into `buffer`), or -errno. Blocks the thread. */
  read(fd: number, poll = true): number {
    const r = native.fdReadRequest(fd, poll);
    if (r < 0) return r;
    const slot = r % 65536;
    this.buffer = this.slotBuffer(slot);
    return (r - slot) / 65536;
  }

  /**
   * Reads one request from `fd` when one is waiting (poll(2) first; never blocks): the request,
   * held in its buffer until `release`, or -errno (-EAGAIN when nothing waits). `buffer` and the
   * request `read` last stay as they are.
   */
  readReady(fd: number): HeldRequest | number {
    const r = native.fdReadRequestReady(fd);
    if (r < 0) return r;
    if (r === 0) return -E_AGAIN;
    const slot = r % 65536;
    return { slot, request: this.slotBuffer(slot).subarray(0, (r - slot) / 65536) };
  }

  /** The request's buffer may be read into again. Once per request from `readReady`. */
  release(held: HeldRequest): void {
    native.requestRelease(held.slot);
  }

  private slotBuffer(slot: number): Buffer {
    return (this.slots[slot] ??= native.requestSlot(slot));
  }
}

/** Writes `buffer`'s first `length` bytes once: the bytes written, or -errno. */
export function fdWrite(fd: number, buffer: Uint8Array, length: number): number {
  return native.fdWrite(fd, buffer, length);
}

/**
 * How long a thread reading FUSE requests (RequestReader) polls the descriptor before it blocks,
 * in ns (0: it blocks at once). Process-wide.
 */
export function fuseSpin(ns: number): void {
  if (!Number.isSafeInteger(ns) || ns < 0 || ns > 10_000_000) throw invalidArgument(`spin must be 0 … 10 ms in ns, got ${ns}`, { argument: 'ns' });
  native.fuseSpin(ns);
}

/** What the request readers' polling did since the process started. */
export function fuseSpinStats(): FuseSpinStats {
  return native.fuseSpinStats();
}

/** One writev(2) of `buffers` (1 to 64) to `fd`: bytes written, or -errno. */
export function fdWritev(fd: number, buffers: Uint8Array[]): number {
  if (buffers.length < 1 || buffers.length > 64) throw invalidArgument('fdWritev takes 1 to 64 buffers', { argument: 'buffers' });
  return native.fdWritev(fd, buffers);
}

/**
 * Takes an exclusive flock(2) on `fd` without waiting: true when held, false when another open
 * file description holds it. The kernel releases it when the descriptor closes or the process
 * dies (SIGKILL included).
 */
export function fdLock(fd: number): boolean {
  const r = native.fdLock(fd);
  if (r === 0) return true;
  if (r === -11) return false; // EWOULDBLOCK
  throw new LayerFsError('ERR_NATIVE_IO', `cannot lock descriptor ${fd}: errno ${-r}`, { errno: String(-r) });
}

/** Creates a FIFO or device node at `path` (raw bytes: any name, UTF-8 or not). Returns 0 or -errno. */
export function makeNode(path: Uint8Array, kind: 'p' | 'c' | 'b', permissions: number, major = 0, minor = 0): number {
  return native.makeNode(path, kind, permissions, major, minor);
}

/**
 * Write-behind (native/napi_write_behind.cc): queues `buffer` (a copy, or the request buffer it lies in when it came from a RequestReader) to be written at
 * `position` of `fd` by a background thread, waiting while 32 MiB are queued already. Returns 0,
 * or -errno of an earlier background failure on `fd` (reported once; nothing is queued then).
 */
export function writeBehind(fd: number, buffer: Uint8Array, position: number): number {
  return native.writeBehind(fd, buffer, position);
}

/**
 * Waits until `fd` has no queued write: 0, or -errno of a background failure not reported yet.
 * `release`: `fd` is about to be closed, so the O_DIRECT descriptor opened for it is closed too
 * (every descriptor given to writeBehind is released this way before it is closed).
 */
export function writeBehindDrain(fd: number, release = false): number {
  return native.writeBehindDrain(fd, release);
}

/**
 * pread(2) of `fd` into `buffer` at `position` once its queued writes are done (the caller
 * drains first): bytes read (fewer only at the end of the file), or -errno. A file whose pieces
 * were written with O_DIRECT is read with O_DIRECT too (no page-cache fill), 1 MiB at a time
 * into a per-thread window that the next writeBehind or writeBehindChanged drops.
 */
export function writeBehindRead(fd: number, buffer: Uint8Array, position: number): number {
  return native.writeBehindRead(fd, buffer, position);
}

/** Call before a file given to writeBehind changes other than through it (ftruncate): writeBehindRead's read-ahead windows are dropped. */
export function writeBehindChanged(): void {
  native.writeBehindChanged();
}

/** Bytes queued for write-behind and not yet written, over all descriptors. */
export function writeBehindPending(): number {
  return native.writeBehindPending();
}

/** Large aligned spool pieces written with O_DIRECT and through the page cache, and the automatic mode's switches between them, since the process started (native/spool_mode.h). */
export function writeBehindModes(): { direct: number; buffered: number; switches: number } {
  return native.writeBehindModes();
}
