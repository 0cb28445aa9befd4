/**
 * The FUSE kernel protocol's wire format (include/uapi/linux/fuse.h): opcodes, INIT and SETATTR
 * flags, struct sizes, and the decoding and encoding helpers the opcode handlers use. Nothing
 * here knows the overlay.
 */
import type { KernelFeatures } from './kernel-features.js';
import type { Attr, Owner } from './overlay.js';

export const IN_HDR = 40;
export const OUT_HDR = 16;
export const ATTR_SIZE = 88;
export const ENTRY_OUT = 40 + ATTR_SIZE;
export const OPEN_OUT = 16;
export const MAX_WRITE = 1 << 20;
/** Payload room of the reply buffer for answers other than READ/READDIR (entries, attributes, xattr values up to this). */
export const REPLY_SCRATCH = 4096;
export const MAX_PAGES = 256;
/** The kernel's request size without FUSE_MAX_PAGES (32 pages). */
export const DEFAULT_MAX_WRITE = 32 * 4096;
/** Lookups of names with this prefix in the root wake the serving thread for a message. */
export const WAKE_PREFIX = '.layerfs-wake-';

export enum Op {
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

/** Requests that change the overlay (they wait while a commit runs); OPEN with O_TRUNC too. */
export const MUTATING = new Set<number>([
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

/**
 * Requests that only read the overlay: answered between the steps of a commit (kernel-worker.ts
 * serveDuringCommit); every other request read meanwhile waits for the commit's end.
 */
export const READ_ONLY_OPS = new Set<number>([Op.LOOKUP, Op.GETATTR, Op.READLINK, Op.STATFS, Op.GETXATTR, Op.LISTXATTR, Op.ACCESS, Op.OPENDIR, Op.READDIR, Op.READDIRPLUS, Op.RELEASEDIR]);

// INIT flags
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
/** The kernel keeps written pages and sends them later (kernel-features.ts: `writeback`). */
export const FUSE_WRITEBACK_CACHE = 1 << 16;
/** The INIT flags this server always asks for (the kernel grants the ones it has). */
const ALWAYS =
  FUSE_ASYNC_READ | FUSE_ATOMIC_O_TRUNC | FUSE_BIG_WRITES | FUSE_AUTO_INVAL_DATA | FUSE_PARALLEL_DIROPS | FUSE_CACHE_SYMLINKS | FUSE_HANDLE_KILLPRIV_V2;

/** The INIT flags asked for with these features on. */
export function wantedFlags(f: KernelFeatures): number {
  let flags = ALWAYS;
  if (f.readdirplus) flags |= FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO;
  if (f.maxpages) flags |= FUSE_MAX_PAGES;
  if (f.writeback) flags |= FUSE_WRITEBACK_CACHE;
  return flags >>> 0;
}
export const FUSE_WRITE_KILL_SUIDGID = 1 << 2;
export const FUSE_OPEN_KILL_SUIDGID = 1 << 0;

// SETATTR valid bits
export const FATTR_MODE = 1 << 0;
export const FATTR_UID = 1 << 1;
export const FATTR_GID = 1 << 2;
export const FATTR_SIZE = 1 << 3;
export const FATTR_ATIME = 1 << 4;
export const FATTR_MTIME = 1 << 5;
export const FATTR_FH = 1 << 6;
export const FATTR_ATIME_NOW = 1 << 7;
export const FATTR_MTIME_NOW = 1 << 8;
export const FATTR_KILL_SUIDGID = 1 << 11;
export const FUSE_GETATTR_FH = 1;
/** The open's reads and writes bypass the kernel's page cache (kernel-features.ts `directwrite`). */
export const FOPEN_DIRECT_IO = 1 << 0;
export const FOPEN_KEEP_CACHE = 1 << 1;
/** The open's reads and writes go to the backing file the reply names (kernel-passthrough.ts). */
export const FOPEN_PASSTHROUGH = 1 << 7;
/** INIT: flags2 (the high 32 bits of the flags) is valid. */
export const FUSE_INIT_EXT = 1 << 30;
/** INIT flags2: FUSE_PASSTHROUGH (bit 37 of the 64-bit flags). */
export const FUSE_PASSTHROUGH_FLAGS2 = 1 << (37 - 32);

/** One decoded request header; the opcode's own arguments start at `p` in `b`. */
export interface Request {
  readonly b: Buffer;
  /** Bytes of the request (never past the buffer). */
  readonly len: number;
  readonly op: number;
  readonly unique: number;
  readonly node: number;
  /** The caller's uid/gid: the owner of what it creates. */
  readonly owner: Owner;
  readonly p: number;
}

export function decodeHeader(b: Buffer): Request {
  return {
    b,
    len: Math.min(b.readUInt32LE(0), b.length),
    op: b.readUInt32LE(4),
    unique: r64(b, 8),
    node: r64(b, 16),
    owner: { uid: b.readUInt32LE(24), gid: b.readUInt32LE(28) },
    p: IN_HDR,
  };
}

export function writeHeader(buf: Buffer, unique: number, len: number, error = 0): void {
  buf.writeUInt32LE(len, 0);
  buf.writeInt32LE(error, 4);
  u64(buf, 8, unique);
}

/**
 * A u64 field as a number, without a BigInt (a heap object) per field: exact below 2^53, which
 * every request id, node id, handle, offset and count on this connection stays.
 */
export function r64(b: Buffer, off: number): number {
  return b.readUInt32LE(off) + b.readUInt32LE(off + 4) * 0x1_0000_0000;
}

/** A u64 field from a non-negative safe integer, without a BigInt (a heap object) per field. */
export function u64(b: Buffer, off: number, x: number): void {
  b.writeUInt32LE(x % 0x1_0000_0000, off);
  b.writeUInt32LE(Math.floor(x / 0x1_0000_0000), off + 4);
}

/** A timestamp (s64 seconds at `secAt`, u32 nanoseconds at `nsAt`) from nanoseconds since the epoch. */
function writeTime(b: Buffer, ns: bigint, secAt: number, nsAt: number): void {
  let s = ns / 1_000_000_000n;
  let r = ns % 1_000_000_000n;
  if (r < 0n) {
    r += 1_000_000_000n;
    s -= 1n;
  }
  b.writeBigInt64LE(s, secAt);
  b.writeUInt32LE(Number(r), nsAt);
}

/** A timestamp field pair of a request, in nanoseconds. */
export function readTime(b: Buffer, secAt: number, nsAt: number): bigint {
  return b.readBigInt64LE(secAt) * 1_000_000_000n + BigInt(b.readUInt32LE(nsAt));
}

/** struct fuse_attr at `off`. */
export function writeAttr(b: Buffer, off: number, a: Attr): void {
  u64(b, off, a.ino);
  u64(b, off + 8, a.size);
  u64(b, off + 16, a.blocks);
  writeTime(b, a.atimeNs, off + 24, off + 48);
  writeTime(b, a.mtimeNs, off + 32, off + 52);
  writeTime(b, a.ctimeNs, off + 40, off + 56);
  b.writeUInt32LE(a.mode, off + 60);
  b.writeUInt32LE(a.nlink, off + 64);
  b.writeUInt32LE(a.uid, off + 68);
  b.writeUInt32LE(a.gid, off + 72);
  b.writeUInt32LE(a.rdev, off + 76);
  b.writeUInt32LE(4096, off + 80);
  b.writeUInt32LE(0, off + 84);
}

/** NUL-terminated name at `off`; returns the bytes and the offset after the NUL. */
export function cstr(b: Buffer, off: number, end: number): { s: Buffer; next: number } {
  let i = off;
  while (i < end && b[i] !== 0) i++;
  return { s: b.subarray(off, i), next: i + 1 };
}

