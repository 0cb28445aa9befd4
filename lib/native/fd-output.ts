/**
 * An output stream (a command's stdout) written in order by the addon's background thread
 * (native/napi_fd_output.cc), while the caller decodes and verifies the next bytes: Buffers are
 * handed over, held (not copied) until written, and written with large writev(2)s. A pipe is
 * enlarged first (F_SETPIPE_SZ), so the reader takes many pages per wake-up. Queued bytes are
 * bounded; the first piece is written on the calling thread, and the thread starts with the
 * second (a small file's output starts none). Buffers to fill come from `buffer()`: once written they are reused, so a long stream
 * neither faults in fresh pages nor leaves garbage per piece. The first failure (EPIPE when the
 * reader went away) is thrown by every later call as ERR_NATIVE_IO with its errno.
 */
import { constants } from 'node:os';
import { LayerFsError } from '../errors.js';
import { native } from './binding.js';

/** Bytes queued at most (a hand-over waits beyond). */
const QUEUE_BYTES = 16 * 1024 * 1024;

/** The size a pipe is enlarged to: Linux's limit for a user without CAP_SYS_RESOURCE (/proc/sys/fs/pipe-max-size). */
export const PIPE_BYTES = 1024 * 1024;

/** Reused buffers kept at most (each at least this large). */
const REUSED = 6;
const REUSED_BYTES = 1024 * 1024;

/** A failed write to the output, with its errno name (EPIPE: the reader went away). */
export function outputError(fd: number, errno: number): LayerFsError {
  const name = Object.entries(constants.errno).find(([, v]) => v === errno)?.[0] ?? `errno ${errno}`;
  return new LayerFsError('ERR_NATIVE_IO', `cannot write to descriptor ${fd}: ${name}`, {
    errno: name,
    fd,
    hint: name === 'EPIPE' ? 'the reader of the output went away' : 'check where the output goes (space, permissions)',
  });
}

export class FdOutput {
  private readonly w: InstanceType<typeof native.FdOutput>;
  /** Pieces handed over so far. */
  private puts = 0;
  /** Reused buffers: `seq` is the number of pieces that must be written before it is free again (0: free). */
  private readonly own: { buf: Buffer; seq: number }[] = [];
  private closed = false;

  constructor(
    readonly fd: number,
    opts: { queueBytes?: number; pipeBytes?: number } = {},
  ) {
    this.w = new native.FdOutput(fd, opts.queueBytes ?? QUEUE_BYTES, opts.pipeBytes ?? PIPE_BYTES);
  }

  /** The size of the pipe written to (0 when it is not a pipe). */
  get pipeSize(): number {
    return this.w.pipeSize;
  }

  /**
   * A buffer of `n` bytes to fill and then `put`: one written already (reused) when there is one
   * large enough, else a new one; waits for the writes when every reused buffer is still queued.
   */
  buffer(n: number): Buffer {
    let free = this.own.find((o) => o.seq === 0 && o.buf.length >= n);
    const queued = this.own.filter((o) => o.seq > 0);
    if (!free && this.own.length >= REUSED && queued.length > 0) {
      // The one handed over first is written first. (A buffer handed out and not put, seq -1, is
      // still being filled, or was dropped: never taken back here.)
      const oldest = queued.reduce((a, o) => (o.seq < a.seq ? o : a));
      this.check(this.w.wait(oldest.seq));
      if (oldest.buf.length < n) oldest.buf = Buffer.allocUnsafeSlow(n);
      free = oldest;
    }
    if (!free) {
      free = { buf: Buffer.allocUnsafeSlow(Math.max(n, REUSED_BYTES)), seq: 0 };
      if (this.own.length >= REUSED) return free.buf.subarray(0, n);
      this.own.push(free);
    }
    free.seq = -1; // handed out, not yet put
    return free.buf.subarray(0, n);
  }

  /** Queues `piece` to be written after those before it; it must not change until written (a buffer from `buffer()` is reused only then). */
  put(piece: Buffer): void {
    if (piece.length === 0) return;
    const r = this.w.put(piece);
    this.check(r);
    this.puts++;
    for (const o of this.own) {
      if (o.seq === -1 && o.buf.buffer === piece.buffer) o.seq = this.puts;
      else if (o.seq > 0 && o.seq <= r) o.seq = 0;
    }
  }

  /** Waits until everything queued is written; throws the first failure. */
  finish(): void {
    this.check(this.w.wait(-1));
  }

  /** Waits for what is queued (or a failure) and ends the thread; idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.w.close();
  }

  private check(r: number): void {
    if (r < 0) throw outputError(this.fd, -r);
    for (const o of this.own) if (o.seq > 0 && o.seq <= r) o.seq = 0;
  }
}
