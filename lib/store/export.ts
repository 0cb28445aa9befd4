/**
 * Writes one state into a new directory: bytes, kinds, modes, owners, mtimes, xattrs, symlinks
 * (created, never followed) and hard-link groups. Every path is built from validated names under
 * the target, and every file is created exclusively, so stored names or symlinks can never make
 * it write outside the target.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, linkSync, lchownSync, mkdirSync, openSync, readdirSync, symlinkSync, writeSync, constants as fsc } from 'node:fs';
import { resolve } from 'node:path';
import { setTimes, setXattr } from '../native/index.js';
import { LayerFsError } from '../errors.js';
import { InodeKind, type Inode } from './tree/inode.js';
import { ROOT_SERIAL } from './tree/root.js';
import type { FsView } from './tree/view.js';

export interface ExportStats {
  files: number;
  directories: number;
  symlinks: number;
  specials: number;
  hardLinks: number;
  bytes: number;
}

const SLASH = 0x2f;

/** A stored name is safe to create under a directory: no separator, not empty, not . or .. */
export function checkStoredName(name: Buffer, where: string): void {
  if (name.length === 0 || name.includes(SLASH) || name.includes(0) || (name.length === 1 && name[0] === 0x2e) || (name.length === 2 && name[0] === 0x2e && name[1] === 0x2e)) {
    throw new LayerFsError('ERR_UNSAFE_PATH', `refusing unsafe stored name ${JSON.stringify(name.toString())} in ${where}`, { path: where, hint: 'the state is damaged; run layerfs verify' });
  }
}

function prepareTarget(target: string): string {
  const abs = resolve(target);
  try {
    mkdirSync(abs, { mode: 0o700 });
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
  return abs;
}

function applyMeta(path: Buffer, inode: Inode, isRoot: boolean): void {
  const isLink = inode.kind === InodeKind.Symlink;
  for (const x of inode.xattrs) setXattr(path, x.name.toString('utf8'), x.value);
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
  const p = path.toString();
  const args = inode.kind === InodeKind.Fifo ? ['mkfifo', p] : ['mknod', p, inode.kind === InodeKind.CharDev ? 'c' : 'b', String(Math.floor((inode.rdev ?? 0) / 256) & 0xfff), String((inode.rdev ?? 0) & 0xff)];
  const r = spawnSync(args[0]!, args.slice(1), { stdio: 'ignore' });
  if (r.status !== 0) throw new LayerFsError('ERR_NATIVE_IO', `cannot create special file ${p}`, { path: p });
}

export interface ExportOptions {
  /** Called for every entry written (the root too, with an empty relative path). */
  onEntry?: (relPath: Buffer, serial: number, parentSerial: number) => void;
  /** The directory to write (default: the root). */
  from?: number;
}

export function exportTree(view: FsView, target: string, opts: ExportOptions = {}): ExportStats {
  const abs = prepareTarget(target);
  const prefix = abs.length + 1;
  const top = opts.from ?? ROOT_SERIAL;
  opts.onEntry?.(Buffer.alloc(0), top, 0);
  const stats: ExportStats = { files: 0, directories: 0, symlinks: 0, specials: 0, hardLinks: 0, bytes: 0 };
  const linked = new Map<number, Buffer>();
  // Directories get their metadata after their contents, deepest first, so writing children
  // does not disturb a directory's restored mtime or a read-only mode.
  const dirs: { path: Buffer; inode: Inode }[] = [];
  const stack: { path: Buffer; serial: number }[] = [{ path: Buffer.from(abs), serial: top }];
  while (stack.length > 0) {
    const { path, serial } = stack.pop()!;
    const dir = view.inode(serial);
    dirs.push({ path, inode: dir });
    for (const { name, serial: childSerial } of view.readdir(dir)) {
      checkStoredName(name, path.toString());
      const p = Buffer.concat([path, Buffer.from('/'), name]);
      const inode = view.inode(childSerial);
      opts.onEntry?.(p.subarray(prefix), childSerial, serial);
      switch (inode.kind) {
        case InodeKind.Dir:
          mkdirSync(p, { mode: 0o700 });
          stats.directories++;
          stack.push({ path: p, serial: childSerial });
          continue;
        default:
          writeLeaf(view, p, inode, childSerial, linked, stats);
      }
    }
  }
  for (let i = dirs.length - 1; i >= 0; i--) applyMeta(dirs[i]!.path, dirs[i]!.inode, i === 0 && top === ROOT_SERIAL);
  return stats;
}

/** Writes one non-directory entry at `p` (absent); a second name of a linked file becomes a hard link. */
function writeLeaf(view: FsView, p: Buffer, inode: Inode, serial: number, linked: Map<number, Buffer>, stats: ExportStats): void {
  switch (inode.kind) {
    case InodeKind.File: {
      const first = linked.get(serial);
      if (first) {
        linkSync(first, p);
        stats.hardLinks++;
        return;
      }
      const fd = openSync(p, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
      try {
        for (const piece of view.content(inode)) {
          let off = 0;
          while (off < piece.length) off += writeSync(fd, piece, off, piece.length - off);
        }
      } finally {
        closeSync(fd);
      }
      if (inode.nlink > 1) linked.set(serial, p);
      stats.files++;
      stats.bytes += inode.size;
      break;
    }
    case InodeKind.Symlink:
      symlinkSync(inode.target!, p);
      stats.symlinks++;
      break;
    default:
      makeSpecial(p, inode);
      stats.specials++;
  }
  applyMeta(p, inode, false);
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
