/**
 * Writes one state into a new directory: bytes, kinds, modes, owners, mtimes, `user.` xattrs,
 * symlinks (created, never followed) and hard-link groups. Every path is built from validated
 * names under the target, and every file is created exclusively, so stored names or symlinks can
 * never make it write outside the target. The state is untrusted input: a directory reached
 * twice (a cycle or fan-out), a name that repeats, a file whose content disagrees with its size
 * is ERR_CORRUPT, and a failed export removes what it wrote (the target too, when it made it).
 */
import { chmodSync, closeSync, linkSync, lchownSync, mkdirSync, openSync, readdirSync, symlinkSync, writeSync, constants as fsc } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { resolve } from 'node:path';
import { makeNode } from '../native/fd.js';
import { FileWriter } from '../native/file-writer.js';
import { setTimes, setXattr } from '../native/xattr.js';
import { LayerFsError, isLayerFsError } from '../errors.js';
import { removeTree } from './remove-tree.js';
import { InodeKind, type Inode, type TreeCounts } from './tree/inode.js';
import { ROOT_SERIAL } from './tree/root.js';
import type { FsView } from './tree/view.js';

export type ExportStats = TreeCounts;

const SLASH = 0x2f;

/** A stored name is safe to create under a directory: no separator, not empty, not . or .. */
export function checkStoredName(name: Buffer, where: string): void {
  if (name.length === 0 || name.includes(SLASH) || name.includes(0) || (name.length === 1 && name[0] === 0x2e) || (name.length === 2 && name[0] === 0x2e && name[1] === 0x2e)) {
    throw new LayerFsError('ERR_UNSAFE_PATH', `refusing unsafe stored name ${JSON.stringify(name.toString())} in ${where}`, { path: where, hint: 'the state is damaged; run layerfs verify' });
  }
}

/** Creates or checks the target; returns whether it was made here. */
function prepareTarget(abs: string): boolean {
  try {
    mkdirSync(abs, { mode: 0o700 });
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') throw new LayerFsError('ERR_NATIVE_IO', `cannot create ${abs}: ${code}`, { path: abs, errno: code });
    let entries: string[];
    try {
      entries = readdirSync(abs);
    } catch {
      throw new LayerFsError('ERR_NOT_A_DIRECTORY', `${abs} exists and is not a directory`, { path: abs });
    }
    if (entries.length > 0) throw new LayerFsError('ERR_NOT_EMPTY', `${abs} is not empty`, { path: abs, hint: 'export into a new or empty directory' });
  }
  return false;
}

/** Only `user.` xattrs are ever stored by import; a forged state's `trusted.`/`security.` ones are not applied. */
const USER_XATTR = 'user.';

function applyMeta(path: Buffer, inode: Inode, isRoot: boolean): void {
  const isLink = inode.kind === InodeKind.Symlink;
  for (const x of inode.xattrs) {
    const name = x.name.toString('utf8');
    if (name.startsWith(USER_XATTR) && !name.includes('\0')) setXattr(path, name, x.value);
  }
  try {
    lchownSync(path, inode.uid, inode.gid);
  } catch (e) {
    // Only root may give files away; a non-root export keeps the caller as owner.
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') throw e;
  }
  if (!isLink) chmodSync(path, inode.mode);
  if (!isRoot || inode.kind === InodeKind.Dir) setTimes(path, inode.mtimeNs, inode.mtimeNs);
}

function makeSpecial(path: Buffer, inode: Inode): void {
  const rdev = inode.rdev ?? 0;
  // The name goes down as bytes: a FIFO named with invalid UTF-8 is created under that name.
  const kind = inode.kind === InodeKind.Fifo ? 'p' : inode.kind === InodeKind.CharDev ? 'c' : 'b';
  const r = makeNode(path, kind, 0o600, Math.floor(rdev / 256) & 0xfff, rdev & 0xff);
  if (r < 0) throw ioError(path, -r === 17 ? 'EEXIST' : `errno ${-r}`);
}

/** A name that exists already in a directory the export made itself can only be a repeated stored name. */
function ioError(path: Buffer, code: string | undefined): LayerFsError {
  const p = path.toString();
  if (code === 'EEXIST') return new LayerFsError('ERR_CORRUPT', `the state names ${JSON.stringify(p)} twice`, { path: p, hint: 'the Store is damaged or forged; run layerfs verify' });
  return new LayerFsError('ERR_NATIVE_IO', `cannot write ${p}: ${code ?? 'error'}`, { path: p, errno: code });
}

/** Runs a file system call on `path`, turning its failure into a typed error. */
function fsCall<T>(path: Buffer, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (isLayerFsError(e)) throw e;
    throw ioError(path, (e as NodeJS.ErrnoException).code);
  }
}

/** Export progress: entries written and file bytes written, of the state's totals. */
export interface ExportProgress {
  entries: number;
  totalEntries: number;
  bytes: number;
  totalBytes: number;
}

export interface ExportOptions {
  /** Called for every entry written (the root too, with an empty relative path). */
  onEntry?: (relPath: Buffer, serial: number, parentSerial: number) => void;
  /** Called every few entries; the totals come from one pass over the inode table first. */
  onProgress?: (p: ExportProgress) => void;
  /** The directory to write (default: the root). */
  from?: number;
}

/** Entries (by name: a hard link counts per name) and file bytes (once per inode) of a state. */
function stateTotals(view: FsView): { totalEntries: number; totalBytes: number } {
  let totalEntries = 0;
  let totalBytes = 0;
  for (const [, inode] of view.inodes()) {
    totalEntries += inode.kind === InodeKind.Dir ? 1 : Math.max(1, inode.nlink);
    if (inode.kind === InodeKind.File) totalBytes += inode.size;
  }
  return { totalEntries, totalBytes };
}

export function exportTree(view: FsView, target: string, opts: ExportOptions = {}): ExportStats {
  const abs = resolve(target);
  const made = prepareTarget(abs);
  try {
    return writeTree(view, abs, opts);
  } catch (e) {
    // Nothing half-written stays behind; a target the caller made stays, empty.
    if (made) removeTree(abs);
    else for (const n of readdirSync(abs, { encoding: 'buffer' })) removeTree(Buffer.concat([Buffer.from(`${abs}/`), n]));
    throw e;
  }
}

function writeTree(view: FsView, abs: string, opts: ExportOptions): ExportStats {
  const top = opts.from ?? ROOT_SERIAL;
  opts.onEntry?.(Buffer.alloc(0), top, 0);
  // The root is a directory of the state too, counted as the import counts it.
  const stats: ExportStats = { files: 0, directories: 1, symlinks: 0, specials: 0, hardLinks: 0, bytes: 0 };
  const linked = new Map<number, Buffer>();
  const totals = opts.onProgress ? stateTotals(view) : { totalEntries: 0, totalBytes: 0 };
  let entries = 1; // the root, written first
  let reportedAt = 0;
  const report = (force: boolean) => {
    if (!opts.onProgress || (!force && stats.bytes - reportedAt < 4 << 20 && entries % 256 !== 0)) return;
    reportedAt = stats.bytes;
    opts.onProgress({ entries, totalEntries: totals.totalEntries, bytes: stats.bytes, totalBytes: totals.totalBytes });
  };
  // A directory serial may be reached once per state: a second time is a cycle or fan-out.
  const seenDirs = new Set<number>([top]);
  const writer = openWriter();
  try {
    walkTree(view, abs, top, opts, { stats, linked, seenDirs, writer, onEntry: () => {
      entries++;
      report(false);
    } });
  } finally {
    writer?.close();
  }
  report(true);
  return stats;
}

interface WalkState {
  stats: ExportStats;
  linked: Map<number, Buffer>;
  seenDirs: Set<number>;
  writer: FileWriter | undefined;
  onEntry: () => void;
}

/** Creates every entry under `top` (directories first, their metadata after their contents). */
function walkTree(view: FsView, abs: string, top: number, opts: ExportOptions, st: WalkState): void {
  const prefix = abs.length + 1;
  const { stats, seenDirs } = st;
  // Directories get their metadata after their contents, deepest first, so writing children
  // does not disturb a directory's restored mtime or a read-only mode.
  const dirs: { path: Buffer; inode: Inode }[] = [];
  const stack: { path: Buffer; serial: number }[] = [{ path: Buffer.from(abs), serial: top }];
  while (stack.length > 0) {
    const { path, serial } = stack.pop()!;
    const dir = view.inode(serial);
    if (dir.kind !== InodeKind.Dir) throw new LayerFsError('ERR_CORRUPT', `the root inode of the state is not a directory`, { hint: 'the Store is damaged or forged; run layerfs verify' });
    dirs.push({ path, inode: dir });
    for (const { name, serial: childSerial } of view.readdir(dir)) {
      checkStoredName(name, path.toString());
      const p = Buffer.concat([path, Buffer.from('/'), name]);
      const inode = view.inode(childSerial);
      opts.onEntry?.(p.subarray(prefix), childSerial, serial);
      st.onEntry();
      switch (inode.kind) {
        case InodeKind.Dir:
          if (seenDirs.has(childSerial)) throw new LayerFsError('ERR_CORRUPT', `directory inode ${childSerial} is reached twice (at ${JSON.stringify(p.subarray(prefix).toString())})`, { path: p.toString(), hint: 'the Store is damaged or forged; run layerfs verify' });
          seenDirs.add(childSerial);
          fsCall(p, () => mkdirSync(p, { mode: 0o700 }));
          stats.directories++;
          stack.push({ path: p, serial: childSerial });
          continue;
        default:
          if (!st.writer || !queueFile(view, st.writer, p, inode, stats)) writeLeaf(view, p, inode, childSerial, st.linked, stats);
      }
    }
  }
  // Every file is in place before the directories get their modes and mtimes.
  if (st.writer) settle(st.writer);
  for (let i = dirs.length - 1; i >= 0; i--) fsCall(dirs[i]!.path, () => applyMeta(dirs[i]!.path, dirs[i]!.inode, i === 0 && top === ROOT_SERIAL));
}

/**
 * Background threads for the files' creation (lib/native/file-writer.ts): $LAYERFS_EXPORT_THREADS
 * of them (default 2; 0 writes every file on the calling thread).
 */
function openWriter(): FileWriter | undefined {
  const n = Number(process.env.LAYERFS_EXPORT_THREADS ?? 2);
  if (!Number.isInteger(n) || n <= 0) return undefined;
  return new FileWriter(Math.min(n, 16), WRITER_QUEUE_BYTES);
}

/** Bytes queued for the writer's threads at most; files above QUEUED_FILE_MAX are written here, streamed. */
const WRITER_QUEUE_BYTES = 64 << 20;
const QUEUED_FILE_MAX = 8 << 20;

/**
 * Hands a plain file (one name, no xattrs, at most QUEUED_FILE_MAX bytes) to the writer's
 * threads; false for any other entry, which the caller writes itself.
 */
function queueFile(view: FsView, writer: FileWriter, p: Buffer, inode: Inode, stats: ExportStats): boolean {
  if (inode.kind !== InodeKind.File || inode.nlink > 1 || inode.xattrs.length > 0 || inode.size > QUEUED_FILE_MAX) return false;
  const pieces: Uint8Array[] = [];
  let size = 0;
  for (const piece of view.content(inode)) {
    pieces.push(piece);
    size += piece.length;
  }
  if (!writer.put(p, pieces, inode.mode, inode.uid, inode.gid, inode.mtimeNs, true)) settle(writer);
  stats.files++;
  stats.bytes += size;
  return true;
}

/** Waits for the writer's queue; its first failure becomes the typed error a file written here would give. */
function settle(writer: FileWriter): void {
  const failed = writer.drain();
  if (failed) throw ioError(failed.path, errnoCode(failed.errno));
}

function errnoCode(errno: number): string {
  for (const [name, n] of Object.entries(osConstants.errno)) if (n === errno) return name;
  return `errno ${errno}`;
}

function writeFile(view: FsView, p: Buffer, inode: Inode): void {
  const fd = fsCall(p, () => openSync(p, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600));
  try {
    for (const piece of view.content(inode)) {
      let off = 0;
      while (off < piece.length) off += fsCall(p, () => writeSync(fd, piece, off, piece.length - off));
    }
  } finally {
    closeSync(fd);
  }
}

/** Writes one non-directory entry at `p` (absent); a second name of a linked file becomes a hard link. */
function writeLeaf(view: FsView, p: Buffer, inode: Inode, serial: number, linked: Map<number, Buffer>, stats: ExportStats): void {
  // Symlinks and special files may be hard-linked too (link(2) does not follow a symlink).
  const first = linked.get(serial);
  if (first) {
    fsCall(p, () => linkSync(first, p));
    stats.hardLinks++;
    return;
  }
  if (inode.nlink > 1) linked.set(serial, p);
  switch (inode.kind) {
    case InodeKind.File: {
      writeFile(view, p, inode);
      stats.files++;
      stats.bytes += inode.size;
      break;
    }
    case InodeKind.Symlink:
      fsCall(p, () => symlinkSync(inode.target!, p));
      stats.symlinks++;
      break;
    default:
      makeSpecial(p, inode);
      stats.specials++;
  }
  fsCall(p, () => applyMeta(p, inode, false));
}

/**
 * Writes the entry `serial` of a state at `target` (which must not exist): a directory with
 * everything under it, or one file, symlink or special file.
 */
export function exportEntry(view: FsView, serial: number, target: string): void {
  const inode = view.inode(serial);
  if (inode.kind === InodeKind.Dir) {
    exportTree(view, target, { from: serial });
    return;
  }
  const stats: ExportStats = { files: 0, directories: 0, symlinks: 0, specials: 0, hardLinks: 0, bytes: 0 };
  writeLeaf(view, Buffer.from(resolve(target)), inode, serial, new Map(), stats);
}
