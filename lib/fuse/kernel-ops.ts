/**
 * One handler per FUSE opcode: each decodes its arguments, calls the overlay and replies through
 * the connection. `OPS` maps opcodes to handlers; an opcode missing from it is answered ENOSYS
 * (LSEEK, COPY_FILE_RANGE, STATX, TMPFILE, locks, ioctl, poll, …: the kernel falls back).
 */
import { constants as fsc } from 'node:fs';
import { E, FsError } from './errno.js';
import { kernelFeatures } from './kernel-features.js';
import { passthrough } from './kernel-passthrough.js';
import { NAME_MAX, RENAME_EXCHANGE, RENAME_NOREPLACE, type Attr, type Overlay } from './overlay.js';
import { nowNs } from './overlay-nodes.js';
import {
  ENTRY_OUT,
  FATTR_ATIME,
  FATTR_ATIME_NOW,
  FATTR_FH,
  FATTR_GID,
  FATTR_KILL_SUIDGID,
  FATTR_MODE,
  FATTR_MTIME,
  FATTR_MTIME_NOW,
  FATTR_SIZE,
  FATTR_UID,
  FOPEN_DIRECT_IO,
  FOPEN_KEEP_CACHE,
  FOPEN_PASSTHROUGH,
  FUSE_INIT_EXT,
  FUSE_PASSTHROUGH_FLAGS2,
  FUSE_GETATTR_FH,
  FUSE_OPEN_KILL_SUIDGID,
  FUSE_WRITE_KILL_SUIDGID,
  DEFAULT_MAX_WRITE,
  FUSE_WRITEBACK_CACHE,
  MAX_PAGES,
  MAX_WRITE,
  OPEN_OUT,
  OUT_HDR,
  Op,
  wantedFlags,
  cstr,
  r64,
  readTime,
  u64,
  writeHeader,
  type Request,
} from './kernel-wire.js';

/** What a handler may use of the connection (KernelProtocol). */
export interface Conn {
  readonly overlay: Overlay;
  /** Seconds the kernel may cache an entry (0: no negative entries). */
  readonly entryValid: number;
  /** The large reply buffer (READ, READDIR). */
  readonly out: Buffer;
  initialized: boolean;
  /** The kernel caches writes (FUSE_WRITEBACK_CACHE granted): it places appends itself. */
  writebackCache: boolean;
  /** Write-only opens bypass the kernel's page cache (the `directwrite` feature). */
  directWrites: boolean;
  log(message: string): void;
  send(b: Buffer, len: number): void;
  error(unique: number, errno: number): void;
  ok(unique: number, payload?: Buffer): void;
  /** Zeroes `n` payload bytes of the small reply buffer, for a handler to fill at OUT_HDR. */
  payload(n: number): Buffer;
  okPayload(unique: number, n: number): void;
  replyEntry(unique: number, serial: number): void;
  fillEntry(b: Buffer, off: number, serial: number): void;
  replyAttr(unique: number, a: Attr): void;
  forget(serial: number, n: number): void;
  killSuid(serial: number): void;
  /** Makes the kernel drop its inode of `serial` once unused, so it loads the overlay's times again. */
  reloadTimes(serial: number): void;
  openDir(serial: number): number;
  closeDir(fh: number): void;
  readdir(unique: number, fh: number, offset: number, size: number, plus: boolean): void;
}

export type OpHandler = (c: Conn, r: Request) => void;

function init(c: Conn, { b, p, unique }: Request): void {
  const major = b.readUInt32LE(p);
  const minor = b.readUInt32LE(p + 4);
  const maxReadahead = b.readUInt32LE(p + 8);
  const flags = b.readUInt32LE(p + 12);
  if (major !== 7 || minor < 23) {
    c.log(`unsupported FUSE protocol ${major}.${minor}`);
    c.error(unique, -E.EPROTO);
    return;
  }
  const features = kernelFeatures();
  const granted = (flags & wantedFlags(features)) >>> 0;
  const out = Buffer.alloc(64);
  out.writeUInt32LE(7, 0);
  out.writeUInt32LE(Math.min(minor, 38), 4);
  out.writeUInt32LE(maxReadahead, 8);
  out.writeUInt32LE(granted, 12);
  out.writeUInt16LE(64, 16);
  out.writeUInt16LE(48, 18);
  out.writeUInt32LE(features.maxpages ? MAX_WRITE : DEFAULT_MAX_WRITE, 20);
  out.writeUInt32LE(1, 24);
  if (features.maxpages) out.writeUInt16LE(MAX_PAGES, 28);
  c.writebackCache = (granted & FUSE_WRITEBACK_CACHE) !== 0;
  c.directWrites = features.directwrite && !c.writebackCache;
  // Passthrough is in flags2; the kernel refuses it together with the writeback cache.
  const flags2 = flags & FUSE_INIT_EXT ? b.readUInt32LE(p + 16) : 0;
  const pass = features.passthrough && !c.writebackCache && (flags2 & FUSE_PASSTHROUGH_FLAGS2) !== 0;
  if (pass) {
    out.writeUInt32LE((granted | FUSE_INIT_EXT) >>> 0, 12);
    out.writeUInt32LE(FUSE_PASSTHROUGH_FLAGS2, 32);
    // max_stack_depth: backing files are spools on an ordinary file system.
    out.writeUInt32LE(1, 36);
  }
  passthrough.negotiated(pass);
  c.ok(unique, out);
  c.initialized = true;
}

/**
 * Open flags as the overlay takes them: with the writeback cache the kernel places appends
 * itself and sends page-sized WRITEs at their own offsets (through any writable handle of the
 * inode), so O_APPEND must not move them to the end.
 */
function openFlags(c: Conn, flags: number): number {
  return c.writebackCache ? flags & ~fsc.O_APPEND : flags;
}

function batchForget(c: Conn, { b, p, len }: Request): void {
  const count = b.readUInt32LE(p);
  for (let i = 0; i < count && p + 8 + i * 16 + 16 <= len; i++) c.forget(r64(b, p + 8 + i * 16), r64(b, p + 16 + i * 16));
}

function lookup(c: Conn, { b, p, len, node, unique }: Request): void {
  const name = cstr(b, p, len).s;
  // The kernel checks only PATH_MAX: a longer name is no name at all, not a missing one.
  if (name.length > NAME_MAX) throw new FsError('ENAMETOOLONG');
  const serial = c.overlay.find(node, name);
  if (serial !== undefined) c.replyEntry(unique, serial);
  else if (c.entryValid > 0) {
    // A negative entry the kernel may cache: every create goes through it.
    u64(c.payload(ENTRY_OUT), OUT_HDR + 16, c.entryValid);
    c.okPayload(unique, ENTRY_OUT);
  } else c.error(unique, -E.ENOENT);
}

function getattr(c: Conn, { b, p, node, unique }: Request): void {
  const flags = b.readUInt32LE(p);
  const fh = r64(b, p + 8);
  c.replyAttr(unique, flags & FUSE_GETATTR_FH && fh ? c.overlay.fgetattr(fh) : c.overlay.getattr(node));
}

/** The times of a SETATTR: null where the request leaves one unchanged (UTIME_OMIT). */
function setTimes(c: Conn, { b, p, node }: Request, valid: number): void {
  const now = nowNs();
  const atime = valid & FATTR_ATIME ? (valid & FATTR_ATIME_NOW ? now : readTime(b, p + 32, p + 56)) : null;
  const mtime = valid & FATTR_MTIME ? (valid & FATTR_MTIME_NOW ? now : readTime(b, p + 40, p + 60)) : null;
  c.overlay.utimens(node, atime, mtime);
}

function setattr(c: Conn, r: Request): void {
  const { b, p, node, unique } = r;
  const ov = c.overlay;
  const valid = b.readUInt32LE(p);
  const fh = r64(b, p + 8);
  if (valid & FATTR_SIZE) {
    passthrough.admit(node, 0, true);
    const size = r64(b, p + 16);
    if (valid & FATTR_FH && fh) ov.ftruncate(fh, size);
    else ov.truncate(node, size);
    // With the writeback cache the kernel owns a file's times and marks them on a size change
    // only: a truncate(2) to the current size comes without FATTR_MTIME, and the time the overlay
    // marks would never be shown (ftruncate sends the kernel's own time).
    if (c.writebackCache && !(valid & FATTR_MTIME)) c.reloadTimes(node);
  }
  if (valid & FATTR_MODE) ov.chmod(node, b.readUInt32LE(p + 68));
  if (valid & (FATTR_UID | FATTR_GID)) ov.chown(node, valid & FATTR_UID ? b.readUInt32LE(p + 76) : -1, valid & FATTR_GID ? b.readUInt32LE(p + 80) : -1);
  if (valid & FATTR_KILL_SUIDGID && !(valid & FATTR_MODE)) c.killSuid(node);
  if (valid & (FATTR_ATIME | FATTR_MTIME)) setTimes(c, r, valid);
  c.replyAttr(unique, ov.getattr(node));
}

function symlink(c: Conn, { b, p, len, node, unique, owner }: Request): void {
  const name = cstr(b, p, len);
  const target = cstr(b, name.next, len).s;
  c.replyEntry(unique, c.overlay.symlink(node, Buffer.from(name.s), Buffer.from(target), owner));
}

function mknod(c: Conn, { b, p, len, node, unique, owner }: Request): void {
  const mode = b.readUInt32LE(p);
  const rdev = b.readUInt32LE(p + 4);
  const name = cstr(b, p + 16, len).s;
  c.replyEntry(unique, c.overlay.mknod(node, Buffer.from(name), mode, rdev, owner));
}

function mkdir(c: Conn, { b, p, len, node, unique, owner }: Request): void {
  const mode = b.readUInt32LE(p);
  const name = cstr(b, p + 8, len).s;
  c.replyEntry(unique, c.overlay.mkdir(node, Buffer.from(name), mode, owner));
}

function unlink(c: Conn, { b, p, len, node, unique }: Request): void {
  c.overlay.unlink(node, Buffer.from(cstr(b, p, len).s));
  c.ok(unique);
}

function rmdir(c: Conn, { b, p, len, node, unique }: Request): void {
  c.overlay.rmdir(node, Buffer.from(cstr(b, p, len).s));
  c.ok(unique);
}

function rename(c: Conn, { b, p, len, node, unique, op }: Request): void {
  const newdir = r64(b, p);
  const flags = op === Op.RENAME2 ? b.readUInt32LE(p + 8) : 0;
  const at = op === Op.RENAME2 ? p + 16 : p + 8;
  const from = cstr(b, at, len);
  const to = cstr(b, from.next, len).s;
  if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) throw new FsError('EINVAL', 'RENAME_WHITEOUT is not supported');
  c.overlay.rename(node, Buffer.from(from.s), newdir, Buffer.from(to), flags);
  c.ok(unique);
}

function link(c: Conn, { b, p, len, node, unique }: Request): void {
  const old = r64(b, p);
  c.overlay.link(old, node, Buffer.from(cstr(b, p + 8, len).s));
  c.replyEntry(unique, old);
}

/**
 * An open's cache flags: the page cache is kept (every change of the content goes through this
 * kernel inode), except for a write-only open with `directwrite`, whose WRITEs carry the writer's
 * own pages (no copy into the page cache; the kernel drops cached pages of the range first).
 */
function cacheFlags(c: Conn, flags: number): number {
  return c.directWrites && (flags & 3) === fsc.O_WRONLY ? FOPEN_DIRECT_IO : FOPEN_KEEP_CACHE;
}

function open(c: Conn, { b, p, node, unique }: Request): void {
  const flags = b.readUInt32LE(p);
  passthrough.admit(node, flags);
  if (b.readUInt32LE(p + 4) & FUSE_OPEN_KILL_SUIDGID) c.killSuid(node);
  const fh = c.overlay.open(node, openFlags(c, flags));
  const backing = passthrough.forOpen(c.overlay, node, fh, flags);
  const out = c.payload(OPEN_OUT);
  u64(out, OUT_HDR, fh);
  // Every change of the content goes through this kernel inode: its page cache stays valid.
  out.writeUInt32LE(backing ? FOPEN_PASSTHROUGH : cacheFlags(c, flags), OUT_HDR + 8);
  out.writeInt32LE(backing, OUT_HDR + 12);
  c.okPayload(unique, OPEN_OUT);
}

function create(c: Conn, { b, p, len, node, unique, owner }: Request): void {
  const flags = b.readUInt32LE(p);
  const mode = b.readUInt32LE(p + 4);
  const name = cstr(b, p + 16, len).s;
  const r = c.overlay.create(node, Buffer.from(name), mode, openFlags(c, flags), (flags & fsc.O_EXCL) !== 0, owner);
  const out = c.payload(ENTRY_OUT + OPEN_OUT);
  c.fillEntry(out, OUT_HDR, r.serial);
  u64(out, OUT_HDR + ENTRY_OUT, r.fh);
  out.writeUInt32LE(cacheFlags(c, flags), OUT_HDR + ENTRY_OUT + 8);
  c.okPayload(unique, ENTRY_OUT + OPEN_OUT);
}

function read(c: Conn, { b, p, unique }: Request): void {
  const fh = r64(b, p);
  const offset = r64(b, p + 8);
  const size = b.readUInt32LE(p + 16);
  const out = c.out;
  const got = c.overlay.read(fh, out.subarray(OUT_HDR, OUT_HDR + Math.min(size, MAX_WRITE)), size, offset);
  writeHeader(out, unique, OUT_HDR + got);
  c.send(out, OUT_HDR + got);
}

function write(c: Conn, { b, p, unique }: Request): void {
  const fh = r64(b, p);
  const offset = r64(b, p + 8);
  const size = b.readUInt32LE(p + 16);
  const data = b.subarray(p + 40, p + 40 + size);
  if (data.length !== size) throw new FsError('EINVAL', 'short write request');
  if (b.readUInt32LE(p + 20) & FUSE_WRITE_KILL_SUIDGID) c.killSuid(c.overlay.serialOf(fh));
  const n = c.overlay.write(fh, data, offset);
  c.payload(8).writeUInt32LE(n, OUT_HDR);
  c.okPayload(unique, 8);
}

function statfs(c: Conn, { unique }: Request): void {
  const s = c.overlay.statfs();
  const out = Buffer.alloc(80);
  u64(out, 0, s.blocks);
  u64(out, 8, s.bfree);
  u64(out, 16, s.bavail);
  u64(out, 24, s.files);
  u64(out, 32, s.ffree);
  out.writeUInt32LE(s.bsize, 40);
  out.writeUInt32LE(s.namemax, 44);
  out.writeUInt32LE(s.frsize, 48);
  c.ok(unique, out);
}

function setxattr(c: Conn, { b, p, len, node, unique }: Request): void {
  const size = b.readUInt32LE(p);
  const flags = b.readUInt32LE(p + 4);
  const name = cstr(b, p + 8, len);
  c.overlay.setxattr(node, Buffer.from(name.s), Buffer.from(b.subarray(name.next, name.next + size)), flags);
  c.ok(unique);
}

/** GETXATTR and LISTXATTR: a size query (size 0), ERANGE, or the value. */
function replyXattr(c: Conn, unique: number, size: number, value: Buffer | undefined): void {
  if (value === undefined) c.error(unique, -E.ENODATA);
  else if (size === 0) {
    c.payload(8).writeUInt32LE(value.length, OUT_HDR);
    c.okPayload(unique, 8);
  } else if (value.length > size) c.error(unique, -E.ERANGE);
  else c.ok(unique, value);
}

function getxattr(c: Conn, { b, p, len, node, unique }: Request): void {
  // The kernel probes security.capability before writes and chown: answered without a throw.
  replyXattr(c, unique, b.readUInt32LE(p), c.overlay.xattr(node, cstr(b, p + 8, len).s));
}

function listxattr(c: Conn, { b, p, node, unique }: Request): void {
  replyXattr(c, unique, b.readUInt32LE(p), Buffer.concat(c.overlay.listxattr(node).flatMap((n) => [n, Buffer.from([0])])));
}

function removexattr(c: Conn, { b, p, len, node, unique }: Request): void {
  c.overlay.removexattr(node, cstr(b, p, len).s);
  c.ok(unique);
}

function access(c: Conn, { b, p, node, unique }: Request): void {
  c.overlay.access(node, b.readUInt32LE(p));
  c.ok(unique);
}

function opendir(c: Conn, { node, unique }: Request): void {
  const out = Buffer.alloc(OPEN_OUT);
  u64(out, 0, c.openDir(node));
  c.ok(unique, out);
}

function readdir(c: Conn, { b, p, unique, op }: Request): void {
  c.readdir(unique, r64(b, p), r64(b, p + 8), b.readUInt32LE(p + 16), op === Op.READDIRPLUS);
}

function fallocate(c: Conn, { b, p, unique }: Request): void {
  const fh = r64(b, p);
  const offset = r64(b, p + 8);
  const length = r64(b, p + 16);
  const mode = b.readUInt32LE(p + 24);
  if (mode !== 0) throw new FsError('EOPNOTSUPP');
  const serial = c.overlay.serialOf(fh);
  if (offset + length > c.overlay.getattr(serial).size) c.overlay.ftruncate(fh, offset + length);
  c.ok(unique);
}

const answer = (c: Conn, r: Request) => c.ok(r.unique);
/** Nothing is durable before a commit; ENOSYS makes the kernel stop asking (and succeed). */
const notDurable = (c: Conn, r: Request) => c.error(r.unique, -E.ENOSYS);
/**
 * FSYNC: nothing is durable before a commit, but a write written behind into the spool that
 * failed (ENOSPC, EIO) is reported here, as fsync(2) reports a lost writeback. FLUSH stays
 * ENOSYS: close(2) costs no round trip (an untar closes every file), and, as on a local file
 * system, it does not wait for writes still queued.
 */
const settle = (c: Conn, r: Request) => {
  c.overlay.flush(r64(r.b, r.p));
  c.ok(r.unique);
};
const noReply = () => {};

export const OPS: Partial<Record<Op, OpHandler>> = {
  [Op.INIT]: init,
  [Op.DESTROY]: answer,
  [Op.FORGET]: (c, r) => c.forget(r.node, r64(r.b, r.p)),
  [Op.BATCH_FORGET]: batchForget,
  [Op.INTERRUPT]: noReply,
  [Op.LOOKUP]: lookup,
  [Op.GETATTR]: getattr,
  [Op.SETATTR]: setattr,
  [Op.READLINK]: (c, r) => c.ok(r.unique, c.overlay.readlink(r.node)),
  [Op.SYMLINK]: symlink,
  [Op.MKNOD]: mknod,
  [Op.MKDIR]: mkdir,
  [Op.UNLINK]: unlink,
  [Op.RMDIR]: rmdir,
  [Op.RENAME]: rename,
  [Op.RENAME2]: rename,
  [Op.LINK]: link,
  [Op.OPEN]: open,
  [Op.CREATE]: create,
  [Op.READ]: read,
  [Op.WRITE]: write,
  [Op.STATFS]: statfs,
  [Op.RELEASE]: (c, r) => {
    passthrough.released(r64(r.b, r.p));
    c.overlay.release(r64(r.b, r.p));
    c.ok(r.unique);
  },
  [Op.FLUSH]: notDurable,
  [Op.FSYNC]: settle,
  [Op.FSYNCDIR]: notDurable,
  [Op.SYNCFS]: answer,
  [Op.SETXATTR]: setxattr,
  [Op.GETXATTR]: getxattr,
  [Op.LISTXATTR]: listxattr,
  [Op.REMOVEXATTR]: removexattr,
  [Op.ACCESS]: access,
  [Op.OPENDIR]: opendir,
  [Op.READDIR]: readdir,
  [Op.READDIRPLUS]: readdir,
  [Op.RELEASEDIR]: (c, r) => {
    c.closeDir(r64(r.b, r.p));
    c.ok(r.unique);
  },
  [Op.FALLOCATE]: fallocate,
};
