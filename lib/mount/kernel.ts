/**
 * The FUSE kernel protocol spoken directly over /dev/fuse, inode by inode: the default backend
 * when this process may mount (root). Compared with fuse-native (libfuse 2, high-level,
 * path-based) it gives the overlay exactly what the kernel asks for:
 * - node ids are serials, so hard links are one kernel inode and attributes can be cached;
 * - times in nanoseconds, and a change of only mtime or only atime (tar, touch -m, cp -p);
 * - RENAME2 with RENAME_NOREPLACE / RENAME_EXCHANGE;
 * - the caller's uid/gid for new inodes; O_EXCL and O_TRUNC as opened;
 * - any name bytes (no UTF-8 round trip), READDIRPLUS, 1 MiB reads and writes.
 *
 * This module holds the protocol (KernelProtocol: one request in, one reply out, synchronous)
 * and the daemon-side controller (KernelMount). The serving loop runs in a worker thread per
 * mount (kernel-worker.ts) that owns the Overlay and blocks in read(2) on /dev/fuse: a request
 * is then one wake-up of that thread instead of a hop through the libuv thread pool and the
 * event loop (measured here: ~27 µs against ~70-200 µs per round trip). The daemon's thread
 * talks to the worker with messages, waking it with a lookup of a throw-away name.
 *
 * Mounting: /dev/fuse is opened here and handed to `mount -i -t fuse.layerfs -o fd=3,…` as its
 * fd 3 (the kernel then talks to this process).
 *
 * Without writeback caching every write(2) reaches the overlay before it returns, and a commit
 * runs on the serving thread between two requests, so it sees everything written before it.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, writeFileSync, constants as fsc } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { LayerFsError, type ErrorCode } from '../errors.js';
import { E, FsError, negErrno } from './errno.js';
import { RENAME_EXCHANGE, RENAME_NOREPLACE, type Attr, type Overlay, type Owner } from './overlay.js';
import type { MountedChanges, MountedCommitOutcome, MountStatus } from './protocol.js';
import { wakeLookup } from './waker.js';
import type { CommitNote } from '../history/index.js';

const IN_HDR = 40;
const OUT_HDR = 16;
const ATTR_SIZE = 88;
const ENTRY_OUT = 40 + ATTR_SIZE;
const OPEN_OUT = 16;
const MAX_WRITE = 1 << 20;
/** Payload room of the reply buffer for answers other than READ/READDIR (entries, attributes, xattr values up to this). */
const REPLY_SCRATCH = 4096;
const MAX_PAGES = 256;
/** Lookups of names with this prefix in the root wake the serving thread for a message. */
export const WAKE_PREFIX = '.layerfs-wake-';

enum Op {
  LOOKUP = 1,
  FORGET = 2,
  GETATTR = 3,
  SETATTR = 4,
  READLINK = 5,
  SYMLINK = 6,
  MKNOD = 8,
  MKDIR = 9,
  UNLINK = 10,
  RMDIR = 11,
  RENAME = 12,
  LINK = 13,
  OPEN = 14,
  READ = 15,
  WRITE = 16,
  STATFS = 17,
  RELEASE = 18,
  FSYNC = 20,
  SETXATTR = 21,
  GETXATTR = 22,
  LISTXATTR = 23,
  REMOVEXATTR = 24,
  FLUSH = 25,
  INIT = 26,
  OPENDIR = 27,
  READDIR = 28,
  RELEASEDIR = 29,
  FSYNCDIR = 30,
  ACCESS = 34,
  CREATE = 35,
  INTERRUPT = 36,
  DESTROY = 38,
  BATCH_FORGET = 42,
  FALLOCATE = 43,
  READDIRPLUS = 44,
  RENAME2 = 45,
  SYNCFS = 50,
}

const MUTATING = new Set<number>([
  Op.SETATTR,
  Op.SYMLINK,
  Op.MKNOD,
  Op.MKDIR,
  Op.UNLINK,
  Op.RMDIR,
  Op.RENAME,
  Op.RENAME2,
  Op.LINK,
  Op.WRITE,
  Op.SETXATTR,
  Op.REMOVEXATTR,
  Op.CREATE,
  Op.FALLOCATE,
  Op.RELEASE,
]);

// INIT flags (include/uapi/linux/fuse.h)
const FUSE_ASYNC_READ = 1 << 0;
const FUSE_ATOMIC_O_TRUNC = 1 << 3;
const FUSE_BIG_WRITES = 1 << 5;
const FUSE_AUTO_INVAL_DATA = 1 << 12;
const FUSE_DO_READDIRPLUS = 1 << 13;
const FUSE_READDIRPLUS_AUTO = 1 << 14;
const FUSE_PARALLEL_DIROPS = 1 << 18;
const FUSE_MAX_PAGES = 1 << 22;
const FUSE_CACHE_SYMLINKS = 1 << 23;
/** The server clears setuid/setgid on write, truncate and chown: the kernel then stops asking for security.capability on every write. */
const FUSE_HANDLE_KILLPRIV_V2 = 1 << 28;
const WANTED =
  FUSE_ASYNC_READ |
  FUSE_ATOMIC_O_TRUNC |
  FUSE_BIG_WRITES |
  FUSE_AUTO_INVAL_DATA |
  FUSE_DO_READDIRPLUS |
  FUSE_READDIRPLUS_AUTO |
  FUSE_PARALLEL_DIROPS |
  FUSE_MAX_PAGES |
  FUSE_CACHE_SYMLINKS |
  FUSE_HANDLE_KILLPRIV_V2;
const FUSE_WRITE_KILL_SUIDGID = 1 << 2;
const FUSE_OPEN_KILL_SUIDGID = 1 << 0;

// setattr valid bits
const FATTR_MODE = 1 << 0;
const FATTR_UID = 1 << 1;
const FATTR_GID = 1 << 2;
const FATTR_SIZE = 1 << 3;
const FATTR_ATIME = 1 << 4;
const FATTR_MTIME = 1 << 5;
const FATTR_FH = 1 << 6;
const FATTR_ATIME_NOW = 1 << 7;
const FATTR_MTIME_NOW = 1 << 8;
const FATTR_KILL_SUIDGID = 1 << 11;
const FUSE_GETATTR_FH = 1;
const FOPEN_KEEP_CACHE = 1 << 1;

export interface KernelProtocolOptions {
  /** Kernel name and attribute cache, seconds (default 60: every change goes through the kernel). */
  entryTimeout?: number;
  attrTimeout?: number;
  log?: (message: string) => void;
}

export interface KernelMountOptions extends Omit<KernelProtocolOptions, 'log'> {
  /** Source shown in /proc/mounts. */
  fsname?: string;
  /** Other users may use the mount (their permissions are checked against each inode's mode). */
  allowOther?: boolean;
  log?: (message: string) => void;
}

function nowNs(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}

/** Whether this process can use the kernel backend: root, /dev/fuse, and a mount(8). */
export function kernelBackendUsable(): boolean {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return false;
  try {
    closeSync(openSync('/dev/fuse', fsc.O_RDWR));
    return true;
  } catch {
    return false;
  }
}

export function runMount(args: string[], fd: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('mount', args, { stdio: ['ignore', 'pipe', 'pipe', fd] });
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', (e) => resolve({ code: -1, out: e.message }));
    child.on('close', (code) => resolve({ code, out: out.trim() }));
  });
}

export function runCmd(cmd: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: 'ignore' });
    child.on('error', () => resolve(false));
    child.on('close', (code) => resolve(code === 0));
  });
}

interface DirHandle {
  serial: number;
  entries: { name: Buffer; serial: number }[];
}

class Reply {
  static header(buf: Buffer, unique: number, len: number, error = 0): void {
    buf.writeUInt32LE(len, 0);
    buf.writeInt32LE(error, 4);
    u64(buf, 8, unique);
  }
}

/**
 * A u64 field as a number, without a BigInt (a heap object) per field: exact below 2^53, which
 * every request id, node id, handle, offset and count on this connection stays.
 */
function r64(b: Buffer, off: number): number {
  return b.readUInt32LE(off) + b.readUInt32LE(off + 4) * 0x1_0000_0000;
}

/** A u64 field from a non-negative safe integer, without a BigInt (a heap object) per field. */
function u64(b: Buffer, off: number, x: number): void {
  b.writeUInt32LE(x % 0x1_0000_0000, off);
  b.writeUInt32LE(Math.floor(x / 0x1_0000_0000), off + 4);
}

function writeAttr(b: Buffer, off: number, a: Attr): void {
  u64(b, off, a.ino);
  u64(b, off + 8, a.size);
  u64(b, off + 16, a.blocks);
  const t = (ns: bigint, at: number, nsAt: number) => {
    let s = ns / 1_000_000_000n;
    let r = ns % 1_000_000_000n;
    if (r < 0n) {
      r += 1_000_000_000n;
      s -= 1n;
    }
    b.writeBigInt64LE(s, off + at);
    b.writeUInt32LE(Number(r), off + nsAt);
  };
  t(a.atimeNs, 24, 48);
  t(a.mtimeNs, 32, 52);
  t(a.ctimeNs, 40, 56);
  b.writeUInt32LE(a.mode, off + 60);
  b.writeUInt32LE(a.nlink, off + 64);
  b.writeUInt32LE(a.uid, off + 68);
  b.writeUInt32LE(a.gid, off + 72);
  b.writeUInt32LE(a.rdev, off + 76);
  b.writeUInt32LE(4096, off + 80);
  b.writeUInt32LE(0, off + 84);
}

/** NUL-terminated name at `off`; returns the bytes and the offset after the NUL. */
function cstr(b: Buffer, off: number, end: number): { s: Buffer; next: number } {
  let i = off;
  while (i < end && b[i] !== 0) i++;
  return { s: b.subarray(off, i), next: i + 1 };
}

/**
 * One mount's requests, answered synchronously through `send` (a write to /dev/fuse). Node ids
 * are overlay serials; the kernel's lookup counts keep unlinked inodes it still references.
 */
export class KernelProtocol {
  /** Reply buffer for READ and READDIR: replies are written synchronously, so one is enough (fresh 128 KiB buffers cost page faults). */
  private readonly out = Buffer.allocUnsafeSlow(OUT_HDR + MAX_WRITE);
  /**
   * Reply buffer for everything else, payload at OUT_HDR: the ~10 requests per created file each
   * allocated two or three Buffers (a CPU profile of an untar showed Buffer construction at 8 %
   * of the serving thread, more than the overlay's own work).
   */
  private readonly reply = Buffer.allocUnsafeSlow(OUT_HDR + REPLY_SCRATCH);
  private readonly lookups = new Map<number, number>();
  private readonly dirs = new Map<number, DirHandle>();
  private nextDirFh = 1;
  private readonly entryValid: number;
  private readonly attrValid: number;
  private readonly log: (message: string) => void;
  /** Requests served, by opcode (diagnostics). */
  readonly counts = new Map<number, number>();
  /** Set once INIT has been answered. */
  initialized = false;

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

  private send(b: Buffer, len = b.length): void {
    this.sendRaw(b, len);
  }

  private error(unique: number, errno: number): void {
    Reply.header(this.reply, unique, OUT_HDR, errno);
    this.send(this.reply, OUT_HDR);
  }

  private ok(unique: number, payload?: Buffer): void {
    const len = OUT_HDR + (payload?.length ?? 0);
    const b = len <= this.reply.length ? this.reply : Buffer.allocUnsafe(len);
    Reply.header(b, unique, len);
    payload?.copy(b, OUT_HDR);
    this.send(b, len);
  }

  /** Zeroes `n` payload bytes of the reply buffer, for a handler to fill at OUT_HDR. */
  private payload(n: number): Buffer {
    this.reply.fill(0, OUT_HDR, OUT_HDR + n);
    return this.reply;
  }

  /** Sends the reply buffer with the `n` payload bytes a handler wrote at OUT_HDR. */
  private okPayload(unique: number, n: number): void {
    Reply.header(this.reply, unique, OUT_HDR + n);
    this.send(this.reply, OUT_HDR + n);
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

  // -------------------------------------------------------------------------------------------
  // Requests

  private replyEntry(unique: number, serial: number): void {
    this.fillEntry(this.payload(ENTRY_OUT), OUT_HDR, serial);
    this.okPayload(unique, ENTRY_OUT);
  }

  private fillEntry(b: Buffer, off: number, serial: number): void {
    u64(b, off, serial);
    u64(b, off + 8, 0);
    u64(b, off + 16, this.entryValid);
    u64(b, off + 24, this.attrValid);
    b.writeUInt32LE(0, off + 32);
    b.writeUInt32LE(0, off + 36);
    writeAttr(b, off + 40, this.overlay.getattr(serial));
    this.lookups.set(serial, (this.lookups.get(serial) ?? 0) + 1);
  }

  private replyAttr(unique: number, a: Attr): void {
    const b = this.payload(16 + ATTR_SIZE);
    u64(b, OUT_HDR, this.attrValid);
    writeAttr(b, OUT_HDR + 16, a);
    this.okPayload(unique, 16 + ATTR_SIZE);
  }

  private forget(serial: number, n: number): void {
    const left = (this.lookups.get(serial) ?? 0) - n;
    if (left > 0) this.lookups.set(serial, left);
    else {
      this.lookups.delete(serial);
      this.overlay.forget(serial);
    }
  }

  /** Answers one request (the bytes read from /dev/fuse). */
  handle(b: Buffer): void {
    const len = Math.min(b.readUInt32LE(0), b.length);
    const op = b.readUInt32LE(4);
    this.counts.set(op, (this.counts.get(op) ?? 0) + 1);
    const unique = r64(b, 8);
    const node = r64(b, 16);
    const owner: Owner = { uid: b.readUInt32LE(24), gid: b.readUInt32LE(28) };
    const p = IN_HDR;
    const ov = this.overlay;
    try {
      switch (op) {
        case Op.INIT: {
          const major = b.readUInt32LE(p);
          const minor = b.readUInt32LE(p + 4);
          const maxReadahead = b.readUInt32LE(p + 8);
          const flags = b.readUInt32LE(p + 12);
          if (major !== 7 || minor < 23) {
            this.log(`unsupported FUSE protocol ${major}.${minor}`);
            this.error(unique, -E.EPROTO);
            return;
          }
          const out = Buffer.alloc(64);
          out.writeUInt32LE(7, 0);
          out.writeUInt32LE(Math.min(minor, 38), 4);
          out.writeUInt32LE(maxReadahead, 8);
          out.writeUInt32LE((flags & WANTED) >>> 0, 12);
          out.writeUInt16LE(64, 16);
          out.writeUInt16LE(48, 18);
          out.writeUInt32LE(MAX_WRITE, 20);
          out.writeUInt32LE(1, 24);
          out.writeUInt16LE(MAX_PAGES, 28);
          this.ok(unique, out);
          this.initialized = true;
          return;
        }
        case Op.DESTROY:
          this.ok(unique);
          return;
        case Op.FORGET:
          this.forget(node, r64(b, p));
          return;
        case Op.BATCH_FORGET: {
          const count = b.readUInt32LE(p);
          for (let i = 0; i < count && p + 8 + i * 16 + 16 <= len; i++) this.forget(r64(b, p + 8 + i * 16), r64(b, p + 16 + i * 16));
          return;
        }
        case Op.INTERRUPT:
          return;
        case Op.LOOKUP: {
          const serial = ov.find(node, cstr(b, p, len).s);
          if (serial !== undefined) this.replyEntry(unique, serial);
          else if (this.entryValid > 0) {
            // A negative entry the kernel may cache: every create goes through it.
            u64(this.payload(ENTRY_OUT), OUT_HDR + 16, this.entryValid);
            this.okPayload(unique, ENTRY_OUT);
          } else this.error(unique, -E.ENOENT);
          return;
        }
        case Op.GETATTR: {
          const flags = b.readUInt32LE(p);
          const fh = r64(b, p + 8);
          this.replyAttr(unique, flags & FUSE_GETATTR_FH && fh ? ov.fgetattr(fh) : ov.getattr(node));
          return;
        }
        case Op.SETATTR: {
          const valid = b.readUInt32LE(p);
          const fh = r64(b, p + 8);
          if (valid & FATTR_SIZE) {
            const size = r64(b, p + 16);
            if (valid & FATTR_FH && fh) ov.ftruncate(fh, size);
            else ov.truncate(node, size);
          }
          if (valid & FATTR_MODE) ov.chmod(node, b.readUInt32LE(p + 68));
          if (valid & (FATTR_UID | FATTR_GID)) ov.chown(node, valid & FATTR_UID ? b.readUInt32LE(p + 76) : -1, valid & FATTR_GID ? b.readUInt32LE(p + 80) : -1);
          if (valid & FATTR_KILL_SUIDGID && !(valid & FATTR_MODE)) this.killSuid(node);
          if (valid & (FATTR_ATIME | FATTR_MTIME)) {
            const now = nowNs();
            const ts = (secAt: number, nsAt: number) => b.readBigInt64LE(p + secAt) * 1_000_000_000n + BigInt(b.readUInt32LE(p + nsAt));
            const atime = valid & FATTR_ATIME ? (valid & FATTR_ATIME_NOW ? now : ts(32, 56)) : null;
            const mtime = valid & FATTR_MTIME ? (valid & FATTR_MTIME_NOW ? now : ts(40, 60)) : null;
            ov.utimens(node, atime, mtime);
          }
          this.replyAttr(unique, ov.getattr(node));
          return;
        }
        case Op.READLINK:
          this.ok(unique, ov.readlink(node));
          return;
        case Op.SYMLINK: {
          const name = cstr(b, p, len);
          const target = cstr(b, name.next, len).s;
          this.replyEntry(unique, ov.symlink(node, Buffer.from(name.s), Buffer.from(target), owner));
          return;
        }
        case Op.MKNOD: {
          const mode = b.readUInt32LE(p);
          const rdev = b.readUInt32LE(p + 4);
          const name = cstr(b, p + 16, len).s;
          this.replyEntry(unique, ov.mknod(node, Buffer.from(name), mode, rdev, owner));
          return;
        }
        case Op.MKDIR: {
          const mode = b.readUInt32LE(p);
          const name = cstr(b, p + 8, len).s;
          this.replyEntry(unique, ov.mkdir(node, Buffer.from(name), mode, owner));
          return;
        }
        case Op.UNLINK:
          ov.unlink(node, Buffer.from(cstr(b, p, len).s));
          this.ok(unique);
          return;
        case Op.RMDIR:
          ov.rmdir(node, Buffer.from(cstr(b, p, len).s));
          this.ok(unique);
          return;
        case Op.RENAME:
        case Op.RENAME2: {
          const newdir = r64(b, p);
          const flags = op === Op.RENAME2 ? b.readUInt32LE(p + 8) : 0;
          const at = op === Op.RENAME2 ? p + 16 : p + 8;
          const from = cstr(b, at, len);
          const to = cstr(b, from.next, len).s;
          if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) throw new FsError('EINVAL', 'RENAME_WHITEOUT is not supported');
          ov.rename(node, Buffer.from(from.s), newdir, Buffer.from(to), flags);
          this.ok(unique);
          return;
        }
        case Op.LINK: {
          const old = r64(b, p);
          ov.link(old, node, Buffer.from(cstr(b, p + 8, len).s));
          this.replyEntry(unique, old);
          return;
        }
        case Op.OPEN: {
          const flags = b.readUInt32LE(p);
          if (b.readUInt32LE(p + 4) & FUSE_OPEN_KILL_SUIDGID) this.killSuid(node);
          const fh = ov.open(node, flags);
          const out = this.payload(OPEN_OUT);
          u64(out, OUT_HDR, fh);
          // Every change of the content goes through this kernel inode: its page cache stays valid.
          out.writeUInt32LE(FOPEN_KEEP_CACHE, OUT_HDR + 8);
          this.okPayload(unique, OPEN_OUT);
          return;
        }
        case Op.CREATE: {
          const flags = b.readUInt32LE(p);
          const mode = b.readUInt32LE(p + 4);
          const name = cstr(b, p + 16, len).s;
          const r = ov.create(node, Buffer.from(name), mode, flags, (flags & fsc.O_EXCL) !== 0, owner);
          const out = this.payload(ENTRY_OUT + OPEN_OUT);
          this.fillEntry(out, OUT_HDR, r.serial);
          u64(out, OUT_HDR + ENTRY_OUT, r.fh);
          out.writeUInt32LE(FOPEN_KEEP_CACHE, OUT_HDR + ENTRY_OUT + 8);
          this.okPayload(unique, ENTRY_OUT + OPEN_OUT);
          return;
        }
        case Op.READ: {
          const fh = r64(b, p);
          const offset = r64(b, p + 8);
          const size = b.readUInt32LE(p + 16);
          const out = this.out;
          const got = ov.read(fh, out.subarray(OUT_HDR, OUT_HDR + Math.min(size, MAX_WRITE)), size, offset);
          Reply.header(out, unique, OUT_HDR + got);
          this.send(out, OUT_HDR + got);
          return;
        }
        case Op.WRITE: {
          const fh = r64(b, p);
          const offset = r64(b, p + 8);
          const size = b.readUInt32LE(p + 16);
          const data = b.subarray(p + 40, p + 40 + size);
          if (data.length !== size) throw new FsError('EINVAL', 'short write request');
          if (b.readUInt32LE(p + 20) & FUSE_WRITE_KILL_SUIDGID) this.killSuid(ov.serialOf(fh));
          const n = ov.write(fh, data, offset);
          this.payload(8).writeUInt32LE(n, OUT_HDR);
          this.okPayload(unique, 8);
          return;
        }
        case Op.STATFS: {
          const s = ov.statfs();
          const out = Buffer.alloc(80);
          u64(out, 0, s.blocks);
          u64(out, 8, s.bfree);
          u64(out, 16, s.bavail);
          u64(out, 24, s.files);
          u64(out, 32, s.ffree);
          out.writeUInt32LE(s.bsize, 40);
          out.writeUInt32LE(s.namemax, 44);
          out.writeUInt32LE(s.frsize, 48);
          this.ok(unique, out);
          return;
        }
        case Op.RELEASE:
          ov.release(r64(b, p));
          this.ok(unique);
          return;
        case Op.FLUSH:
        case Op.FSYNC:
        case Op.FSYNCDIR:
          // Nothing is durable before a commit; ENOSYS makes the kernel stop asking (and succeed).
          this.error(unique, -E.ENOSYS);
          return;
        case Op.SYNCFS:
          this.ok(unique);
          return;
        case Op.SETXATTR: {
          const size = b.readUInt32LE(p);
          const flags = b.readUInt32LE(p + 4);
          const name = cstr(b, p + 8, len);
          ov.setxattr(node, Buffer.from(name.s), Buffer.from(b.subarray(name.next, name.next + size)), flags);
          this.ok(unique);
          return;
        }
        case Op.GETXATTR:
        case Op.LISTXATTR: {
          const size = b.readUInt32LE(p);
          let value: Buffer | undefined;
          // The kernel probes security.capability before writes and chown: answered without a throw.
          if (op === Op.GETXATTR) value = ov.xattr(node, cstr(b, p + 8, len).s);
          else value = Buffer.concat(ov.listxattr(node).flatMap((n) => [n, Buffer.from([0])]));
          if (value === undefined) this.error(unique, -E.ENODATA);
          else if (size === 0) {
            this.payload(8).writeUInt32LE(value.length, OUT_HDR);
            this.okPayload(unique, 8);
          } else if (value.length > size) this.error(unique, -E.ERANGE);
          else this.ok(unique, value);
          return;
        }
        case Op.REMOVEXATTR:
          ov.removexattr(node, cstr(b, p, len).s);
          this.ok(unique);
          return;
        case Op.ACCESS:
          ov.access(node, b.readUInt32LE(p));
          this.ok(unique);
          return;
        case Op.OPENDIR: {
          const fh = this.nextDirFh++;
          this.dirs.set(fh, { serial: node, entries: this.snapshot(node) });
          const out = Buffer.alloc(OPEN_OUT);
          u64(out, 0, fh);
          this.ok(unique, out);
          return;
        }
        case Op.READDIR:
        case Op.READDIRPLUS: {
          const fh = r64(b, p);
          const offset = r64(b, p + 8);
          const size = b.readUInt32LE(p + 16);
          this.readdir(unique, fh, offset, size, op === Op.READDIRPLUS);
          return;
        }
        case Op.RELEASEDIR:
          this.dirs.delete(r64(b, p));
          this.ok(unique);
          return;
        case Op.FALLOCATE: {
          const fh = r64(b, p);
          const offset = r64(b, p + 8);
          const length = r64(b, p + 16);
          const mode = b.readUInt32LE(p + 24);
          if (mode !== 0) throw new FsError('EOPNOTSUPP');
          const serial = ov.serialOf(fh);
          if (offset + length > ov.getattr(serial).size) ov.ftruncate(fh, offset + length);
          this.ok(unique);
          return;
        }
        default:
          // LSEEK, COPY_FILE_RANGE, STATX, TMPFILE, locks, ioctl, poll, …: the kernel falls back.
          this.error(unique, -E.ENOSYS);
      }
    } catch (e) {
      if (!(e instanceof FsError)) this.log(`op ${op} failed: ${(e as Error)?.stack ?? String(e)}`);
      this.error(unique, negErrno(e));
    }
  }

  /** Clears setuid, and setgid when group-executable, as the kernel would (HANDLE_KILLPRIV_V2). */
  private killSuid(serial: number): void {
    const a = this.overlay.getattr(serial);
    if ((a.mode & fsc.S_IFMT) === fsc.S_IFDIR || (a.mode & 0o6000) === 0) return;
    const kill = 0o4000 | (a.mode & 0o010 ? 0o2000 : 0);
    if (a.mode & kill) this.overlay.chmod(serial, a.mode & 0o7777 & ~kill);
  }

  private snapshot(serial: number): { name: Buffer; serial: number }[] {
    const parent = serial === 1 ? 1 : this.overlay.lookup(serial, Buffer.from('..'));
    return [{ name: Buffer.from('.'), serial }, { name: Buffer.from('..'), serial: parent }, ...this.overlay.readdir(serial).map((e) => ({ name: e.name, serial: e.serial }))];
  }

  private readdir(unique: number, fh: number, offset: number, size: number, plus: boolean): void {
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
        const dot = i < 2;
        if (!dot) this.fillEntry(out, at, e.serial);
        d = at + ENTRY_OUT;
      }
      u64(out, d, attr.ino);
      u64(out, d + 8, i + 1);
      out.writeUInt32LE(e.name.length, d + 16);
      out.writeUInt32LE((attr.mode >>> 12) & 15, d + 20);
      e.name.copy(out, d + 24);
      at += rec;
    }
    Reply.header(out, unique, at);
    this.send(out, at);
  }
}

// ---------------------------------------------------------------------------------------------
// The daemon side: mount, start the serving worker, talk to it, unmount.

/** What the worker needs to build the Workspace's overlay (hex ids; the worker opens its own Store connection). */
export interface KernelWorkerParams {
  storePath: string;
  spoolDir: string;
  rootId: string;
  branchId: string;
  expectedHead: string | null;
  expectedBase: string;
  workspaceId: string | null;
  memoryBudget?: number;
  protocol: { entryTimeout?: number; attrTimeout?: number };
}

type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;
export type ToWorker = { id: number; type: 'commit'; note: CommitNote; strict: boolean } | { id: number; type: 'state' } | { id: number; type: 'changes' };
export type FromWorker =
  | { type: 'ready' }
  | { type: 'dirty' }
  | { type: 'log'; message: string }
  | { type: 'fatal'; message: string }
  | { type: 'ended' }
  | { type: 'result'; id: number; ok: true; value: unknown }
  | { type: 'result'; id: number; ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

/**
 * Starts kernel-worker beside this module: kernel-worker.js in dist/; from sources (under tsx)
 * the worker registers tsx itself first, since Node 20 workers do not inherit module hooks.
 */
function startWorker(workerData: unknown): Worker {
  const js = new URL('./kernel-worker.js', import.meta.url);
  if (existsSync(fileURLToPath(js))) return new Worker(js, { workerData });
  const ts = new URL('./kernel-worker.ts', import.meta.url);
  if (!existsSync(fileURLToPath(ts))) throw new LayerFsError('ERR_NOT_FOUND', 'kernel-worker is missing beside kernel.js', { hint: 'reinstall layerfs' });
  let api: string;
  try {
    api = import.meta.resolve('tsx/esm/api');
  } catch {
    throw new LayerFsError('ERR_NOT_FOUND', 'running from TypeScript sources needs tsx to start the serving thread');
  }
  const code = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(ts.href)}); })`;
  return new Worker(code, { eval: true, workerData });
}

/** A mount of this namespace uses FUSE connection `n` (device 0:n). */
async function connectionMounted(n: number): Promise<boolean> {
  try {
    const text = await readFile('/proc/self/mountinfo', 'utf8');
    return text.split('\n').some((l) => l.split(' ')[2] === `0:${n}`);
  } catch {
    return true; // unknown: do not abort
  }
}

/**
 * The FUSE connection number (device 0:n) of the newest mount at `mountpoint`, from
 * /proc/self/mountinfo: a stat of the mount point would be a request to our own mount, which a
 * kill at the wrong moment turns into a wait that never ends (waker.ts).
 */
async function connectionAt(mountpoint: string): Promise<number | null> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  // Mount points are octal-escaped there (space, tab, newline, backslash).
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  let found: number | null = null;
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length > 4 && unescape(f[4]!) === mountpoint && f[2]!.startsWith('0:')) found = Number(f[2]!.slice(2));
  }
  return found;
}

/** The controller of one kernel-backend mount (lives on the daemon's thread). */
export class KernelMount {
  private fd = -1;
  private worker: Worker | null = null;
  private nextId = 1;
  private wakes = 0;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private ended: Promise<void>;
  private markEnded!: () => void;
  private isEnded = false;
  private ready!: { resolve: () => void; reject: (e: unknown) => void };
  private connection: number | null = null;
  private readonly log: (message: string) => void;
  private readonly fsname: string;

  constructor(
    readonly mountpoint: string,
    private readonly params: KernelWorkerParams,
    private readonly opts: KernelMountOptions = {},
    private readonly onDirty: () => void = () => {},
  ) {
    this.log = opts.log ?? (() => {});
    this.fsname = (opts.fsname ?? 'layerfs').replace(/[^A-Za-z0-9_.:@+-]/g, '_');
    this.ended = new Promise((r) => (this.markEnded = r));
  }

  async mount(): Promise<void> {
    this.fd = openSync('/dev/fuse', fsc.O_RDWR);
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    // nosuid,nodev always: a state is data, and a setuid binary or a device node in it must
    // never grant what its mode claims. With allow_other the kernel checks each inode's mode
    // (default_permissions); without it only the mount's uid may enter, and when that is root
    // the checks would pass anyway (DAC override), so leaving them out saves a GETATTR of the
    // parent after every create.
    const permissions = uid === 0 && !this.opts.allowOther ? '' : ',default_permissions';
    const r = await runMount(['-i', '-t', 'fuse.layerfs', '-o', `fd=3,rootmode=40000,user_id=${uid},group_id=${gid},nosuid,nodev${permissions}${this.opts.allowOther ? ',allow_other' : ''}`, this.fsname, this.mountpoint], this.fd);
    if (r.code !== 0) {
      closeSync(this.fd);
      throw new FsError('EIO', `mount failed: ${r.out || `exit ${r.code}`}`);
    }
    // The kernel has queued INIT; the worker answers it first thing.
    const ready = new Promise<void>((resolve, reject) => (this.ready = { resolve, reject }));
    const w = startWorker({ fd: this.fd, params: this.params });
    this.worker = w;
    w.on('message', (m: FromWorker) => this.message(m));
    w.on('error', (e) => {
      this.log(`serving thread failed: ${e.stack ?? e.message}`);
      this.ready.reject(e);
      this.finish();
    });
    w.on('exit', () => this.finish());
    const timeout = new Promise<'timeout'>((res) => setTimeout(() => res('timeout'), 15_000).unref());
    try {
      if ((await Promise.race([ready.then(() => 'ok' as const), timeout])) === 'timeout') throw new FsError('ETIMEDOUT', 'the mount did not come up');
    } catch (e) {
      await runCmd('umount', ['-l', this.mountpoint]);
      void w.terminate();
      throw e;
    }
    try {
      this.connection = await connectionAt(this.mountpoint);
      if (this.connection === null) throw new Error('not in mountinfo');
      // Larger sequential READs: fewer round trips (the kernel starts a mount at 128 KiB).
      writeFileSync(`/sys/class/bdi/0:${this.connection}/read_ahead_kb`, String(MAX_WRITE >> 10));
    } catch {
      /* no sysfs, or not allowed: the default readahead */
    }
  }

  private message(m: FromWorker): void {
    switch (m.type) {
      case 'ready':
        this.ready.resolve();
        return;
      case 'dirty':
        this.onDirty();
        return;
      case 'log':
        this.log(m.message);
        return;
      case 'fatal':
        this.log(`serving thread stopped: ${m.message}`);
        this.ready.reject(new FsError('EIO', m.message));
        return;
      case 'ended':
        this.finish();
        return;
      case 'result': {
        const w = this.waiting.get(m.id);
        if (!w) return;
        this.waiting.delete(m.id);
        if (m.ok) w.resolve(m.value);
        else w.reject(new LayerFsError(m.error.code as ErrorCode, m.error.message, m.error.details ?? {}));
      }
    }
  }

  /** The serving thread is gone (unmounted, or it failed): close our end so the kernel aborts anything still waiting. */
  private finish(): void {
    if (this.isEnded) return;
    this.isEnded = true;
    for (const w of this.waiting.values()) w.reject(new LayerFsError('ERR_BUSY', 'the mount ended'));
    this.waiting.clear();
    try {
      closeSync(this.fd);
    } catch {
      /* closed */
    }
    this.markEnded();
  }

  /** Sends one message to the serving thread and waits for its answer. */
  private ask<T>(message: DistributiveOmit<ToWorker, 'id'>): Promise<T> {
    if (!this.worker || this.isEnded) return Promise.reject(new LayerFsError('ERR_BUSY', 'the mount has ended'));
    const id = this.nextId++;
    const p = new Promise<T>((resolve, reject) => this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject }));
    this.worker.postMessage({ ...message, id } as ToWorker);
    // The serving thread sleeps in read(2): a lookup of a fresh name wakes it. A child process
    // makes it, never a thread of ours (waker.ts: a killed daemon could otherwise never exit).
    wakeLookup(join(this.mountpoint, `${WAKE_PREFIX}${this.wakes++}`));
    return p;
  }

  commit(note: CommitNote, strict = false): Promise<{ outcome: MountedCommitOutcome; changed: boolean }> {
    return this.ask({ type: 'commit', note, strict });
  }

  state(): Promise<Pick<MountStatus, 'pending' | 'openHandles' | 'committing' | 'requests'> & { changed: boolean }> {
    return this.ask({ type: 'state' });
  }

  changes(): Promise<MountedChanges> {
    return this.ask({ type: 'changes' });
  }

  /** Lazy unmount; the serving thread ends with the connection (a busy one is aborted after a grace period when fusectl allows). */
  async unmount(): Promise<void> {
    if (!this.isEnded) {
      if (!(await runCmd('umount', ['-l', this.mountpoint]))) await runCmd('fusermount', ['-uz', this.mountpoint]);
      const grace = new Promise<'late'>((res) => setTimeout(() => res('late'), 2000).unref());
      // Abort only a connection no live mount uses: once ours has ended its number can be reused
      // by a new mount, which an abort would break (ECONNABORTED instead of a clean end).
      if ((await Promise.race([this.ended.then(() => 'ended' as const), grace])) === 'late' && this.connection !== null && !this.isEnded && !(await connectionMounted(this.connection))) {
        try {
          writeFileSync(`/sys/fs/fuse/connections/${this.connection}/abort`, '1');
        } catch {
          /* no fusectl: the connection ends with its last user */
        }
      }
    }
    void this.worker?.terminate();
  }
}
