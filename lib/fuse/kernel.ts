/**
 * The FUSE kernel protocol spoken directly over /dev/fuse, inode by inode: how every mount is
 * served. Unlike a high-level, path-based library (libfuse 2) it gives the overlay exactly what
 * the kernel asks for:
 * - node ids are serials, so hard links are one kernel inode and attributes can be cached;
 * - times in nanoseconds, and a change of only mtime or only atime (tar, touch -m, cp -p);
 * - RENAME2 with RENAME_NOREPLACE / RENAME_EXCHANGE;
 * - the caller's uid/gid for new inodes; O_EXCL and O_TRUNC as opened;
 * - any name bytes (no UTF-8 round trip), READDIRPLUS, 1 MiB reads and writes.
 *
 * Three modules: kernel-wire.ts (the wire format), kernel-ops.ts (one handler per opcode) and
 * this one (KernelProtocol: one request in, one reply out, synchronous: the reply buffers, the
 * kernel's lookup counts, open directories). The serving loop runs in a worker thread per mount
 * (kernel-worker.ts) that owns the Overlay and blocks in read(2) on /dev/fuse: a request is then
 * one wake-up of that thread instead of a hop through the libuv thread pool and the event loop
 * (measured here: ~27 µs against ~70-200 µs per round trip). Large READs of unchanged stored
 * content are handed to reader threads (kernel-readers.ts), so the serving thread keeps answering
 * metadata meanwhile. kernel-mount.ts is the daemon-side controller (mount, messages to the
 * worker, unmount).
 *
 * Without writeback caching every write(2) reaches the overlay before it returns, and a commit
 * runs on the serving thread between two requests, so it sees everything written before it.
 */
import { constants as fsc } from 'node:fs';
import { E, FsError, negErrno } from './errno.js';
import { invalEntry } from './kernel-notify.js';
import { OPS, type Conn } from './kernel-ops.js';
import { ATTR_SIZE, ENTRY_OUT, IN_HDR, MAX_WRITE, MUTATING, OUT_HDR, Op, REPLY_SCRATCH, WAKE_PREFIX, decodeHeader, r64, u64, writeAttr, writeHeader } from './kernel-wire.js';
import type { Attr, Overlay } from './overlay.js';
import { SerialMap } from '../store/index.js';

export { WAKE_PREFIX } from './kernel-wire.js';
export { endSharedCheckpoints, endSpareWorker, spareStats } from './kernel-spare.js';
export { KernelMount, kernelBackendUsable, runCmd, runMount, type FromWorker, type KernelMountOptions, type KernelWorkerParams, type StartWorker, type ToWorker } from './kernel-mount.js';

export interface KernelProtocolOptions {
  /** Kernel name and attribute cache, seconds (default 60: every change goes through the kernel). */
  entryTimeout?: number;
  attrTimeout?: number;
  log?: (message: string) => void;
}

interface DirHandle {
  serial: number;
  entries: { name: Buffer; serial: number }[];
}

/**
 * One mount's requests, answered synchronously through `send` (a write to /dev/fuse). Node ids
 * are overlay serials; the kernel's lookup counts keep unlinked inodes it still references.
 */
export class KernelProtocol implements Conn {
  /** Reply buffer for READ and READDIR: replies are written synchronously, so one is enough (fresh 128 KiB buffers cost page faults). */
  readonly out = Buffer.allocUnsafeSlow(OUT_HDR + MAX_WRITE);
  /**
   * Reply buffer for everything else, payload at OUT_HDR: the ~10 requests per created file each
   * allocated two or three Buffers (a CPU profile of an untar showed Buffer construction at 8 %
   * of the serving thread, more than the overlay's own work).
   */
  private readonly reply = Buffer.allocUnsafeSlow(OUT_HDR + REPLY_SCRATCH);
  /** The kernel's lookup count per node id (a serial). */
  private readonly lookups = new SerialMap();
  private readonly dirs = new Map<number, DirHandle>();
  private nextDirFh = 1;
  readonly entryValid: number;
  private readonly attrValid: number;
  readonly log: (message: string) => void;
  /** Requests served, by opcode (diagnostics). */
  readonly counts = new Map<number, number>();
  /** Set once INIT has been answered. */
  initialized = false;
  writebackCache = false;
  directWrites = false;
  /** Has a thread other than this one write these notifications (kernel-worker.ts). */
  forgetEntries: ((notes: Buffer[]) => void) | null = null;

  constructor(
    readonly overlay: Overlay,
    private readonly sendRaw: (b: Buffer, len: number) => void,
    opts: KernelProtocolOptions = {},
  ) {
    this.entryValid = Math.max(0, Math.floor(opts.entryTimeout ?? 60));
    this.attrValid = Math.max(0, Math.floor(opts.attrTimeout ?? 60));
    this.log = opts.log ?? (() => {});
  }

  /** Requests served so far, by operation name. */
  requestCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [op, n] of this.counts) out[Op[op] ?? `op${op}`] = n;
    return out;
  }

  /** Whether the kernel still references `serial` (the overlay keeps an unlinked inode while it does). */
  retains(serial: number): boolean {
    return (this.lookups.get(serial) ?? 0) > 0;
  }

  /** True for the daemon's wake-up lookups (answered ENOENT, never cached). */
  static isWake(b: Buffer, n: number): boolean {
    if (n < IN_HDR + WAKE_PREFIX.length || b.readUInt32LE(4) !== Op.LOOKUP || r64(b, 16) !== 1) return false;
    return b.toString('latin1', IN_HDR, IN_HDR + WAKE_PREFIX.length) === WAKE_PREFIX;
  }

  wakeReply(b: Buffer): void {
    this.error(r64(b, 8), -E.ENOENT);
  }

  /** Whether a request changes the overlay (it must wait while a commit runs). */
  static mutating(b: Buffer): boolean {
    const op = b.readUInt32LE(4);
    return MUTATING.has(op) || (op === Op.OPEN && (b.readUInt32LE(IN_HDR) & fsc.O_TRUNC) !== 0);
  }

  /** Answers one request (the bytes read from /dev/fuse) through its opcode's handler. */
  handle(b: Buffer): void {
    const r = decodeHeader(b);
    this.counts.set(r.op, (this.counts.get(r.op) ?? 0) + 1);
    const handler = OPS[r.op as Op];
    if (!handler) {
      this.error(r.unique, -E.ENOSYS);
      return;
    }
    try {
      handler(this, r);
    } catch (e) {
      if (!(e instanceof FsError)) this.log(`op ${r.op} failed: ${(e as Error)?.stack ?? String(e)}`);
      this.error(r.unique, negErrno(e));
    }
    this.overlay.trim();
  }

  // -------------------------------------------------------------------------------------------
  // Replies (the Conn the opcode handlers use)

  send(b: Buffer, len = b.length): void {
    this.sendRaw(b, len);
  }

  error(unique: number, errno: number): void {
    writeHeader(this.reply, unique, OUT_HDR, errno);
    this.send(this.reply, OUT_HDR);
  }

  ok(unique: number, payload?: Buffer): void {
    const len = OUT_HDR + (payload?.length ?? 0);
    const b = len <= this.reply.length ? this.reply : Buffer.allocUnsafe(len);
    writeHeader(b, unique, len);
    payload?.copy(b, OUT_HDR);
    this.send(b, len);
  }

  payload(n: number): Buffer {
    this.reply.fill(0, OUT_HDR, OUT_HDR + n);
    return this.reply;
  }

  /** Sends the reply buffer with the `n` payload bytes a handler wrote at OUT_HDR. */
  okPayload(unique: number, n: number): void {
    writeHeader(this.reply, unique, OUT_HDR + n);
    this.send(this.reply, OUT_HDR + n);
  }

  replyEntry(unique: number, serial: number): void {
    this.fillEntry(this.payload(ENTRY_OUT), OUT_HDR, serial);
    this.okPayload(unique, ENTRY_OUT);
  }

  /** struct fuse_entry_out at `off`; the kernel now holds one more lookup of `serial`. */
  fillEntry(b: Buffer, off: number, serial: number): void {
    u64(b, off, serial);
    u64(b, off + 8, 0);
    u64(b, off + 16, this.entryValid);
    u64(b, off + 24, this.attrValid);
    b.writeUInt32LE(0, off + 32);
    b.writeUInt32LE(0, off + 36);
    writeAttr(b, off + 40, this.overlay.getattr(serial));
    this.lookups.set(serial, (this.lookups.get(serial) ?? 0) + 1);
  }

  replyAttr(unique: number, a: Attr): void {
    const b = this.payload(16 + ATTR_SIZE);
    u64(b, OUT_HDR, this.attrValid);
    writeAttr(b, OUT_HDR + 16, a);
    this.okPayload(unique, 16 + ATTR_SIZE);
  }

  forget(serial: number, n: number): void {
    const left = (this.lookups.get(serial) ?? 0) - n;
    if (left > 0) this.lookups.set(serial, left);
    else {
      this.lookups.delete(serial);
      this.overlay.forget(serial);
    }
  }

  /** Clears setuid, and setgid when group-executable, as the kernel would (HANDLE_KILLPRIV_V2). */
  killSuid(serial: number): void {
    const a = this.overlay.getattr(serial);
    if ((a.mode & fsc.S_IFMT) === fsc.S_IFDIR || (a.mode & 0o6000) === 0) return;
    const kill = 0o4000 | (a.mode & 0o010 ? 0o2000 : 0);
    if (a.mode & kill) this.overlay.chmod(serial, a.mode & 0o7777 & ~kill);
  }

  /**
   * The kernel keeps the times of a regular file it caches writes for and takes none from
   * replies; only a fresh kernel inode loads them. FUSE drops an inode with its last reference,
   * so forgetting every name of it (FUSE_NOTIFY_INVAL_ENTRY, written by a reader thread: see
   * kernel-notify.ts) makes the next lookup load the overlay's times, unless the file is open.
   */
  reloadTimes(serial: number): void {
    const names = this.overlay.namesOf(serial);
    if (names.length > 0) this.forgetEntries?.(names.map((n) => invalEntry(n.parent, n.name)));
  }

  // -------------------------------------------------------------------------------------------
  // Directories

  openDir(serial: number): number {
    const fh = this.nextDirFh++;
    this.dirs.set(fh, { serial, entries: this.snapshot(serial) });
    return fh;
  }

  closeDir(fh: number): void {
    this.dirs.delete(fh);
  }

  private snapshot(serial: number): { name: Buffer; serial: number }[] {
    const parent = serial === 1 ? 1 : this.overlay.lookup(serial, Buffer.from('..'));
    return [{ name: Buffer.from('.'), serial }, { name: Buffer.from('..'), serial: parent }, ...this.overlay.readdir(serial).map((e) => ({ name: e.name, serial: e.serial }))];
  }

  readdir(unique: number, fh: number, offset: number, size: number, plus: boolean): void {
    const h = this.dirs.get(fh);
    if (!h) throw new FsError('EBADF');
    // rewinddir: a listing from the start reflects the directory as it is now.
    if (offset === 0) h.entries = this.snapshot(h.serial);
    const out = this.out.subarray(0, OUT_HDR + Math.min(size, MAX_WRITE));
    out.fill(0);
    let at = OUT_HDR;
    for (let i = offset; i < h.entries.length; i++) {
      const e = h.entries[i]!;
      let attr: Attr;
      try {
        attr = this.overlay.getattr(e.serial);
      } catch {
        continue; // gone since the listing was taken
      }
      const dirent = (24 + e.name.length + 7) & ~7;
      const rec = plus ? ENTRY_OUT + dirent : dirent;
      if (at + rec > out.length) break;
      let d = at;
      if (plus) {
        // "." and ".." are listed without an entry: the kernel takes no lookup of them.
        if (i >= 2) this.fillEntry(out, at, e.serial);
        d = at + ENTRY_OUT;
      }
      u64(out, d, attr.ino);
      u64(out, d + 8, i + 1);
      out.writeUInt32LE(e.name.length, d + 16);
      out.writeUInt32LE((attr.mode >>> 12) & 15, d + 20);
      e.name.copy(out, d + 24);
      at += rec;
    }
    writeHeader(out, unique, at);
    this.send(out, at);
  }
}
