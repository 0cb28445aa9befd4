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
  const abs = prepareTarget(target);
  const prefix = abs.length + 1;
  opts.onEntry?.(Buffer.alloc(0), ROOT_SERIAL, 0);
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
  // Directories get their metadata after their contents, deepest first, so writing children
  // does not disturb a directory's restored mtime or a read-only mode.
  const dirs: { path: Buffer; inode: Inode }[] = [];
  const stack: { path: Buffer; serial: number }[] = [{ path: Buffer.from(abs), serial: ROOT_SERIAL }];
  while (stack.length > 0) {
    const { path, serial } = stack.pop()!;
    const dir = view.inode(serial);
    dirs.push({ path, inode: dir });
    for (const { name, serial: childSerial } of view.readdir(dir)) {
      checkStoredName(name, path.toString());
      const p = Buffer.concat([path, Buffer.from('/'), name]);
      const inode = view.inode(childSerial);
      opts.onEntry?.(p.subarray(prefix), childSerial, serial);
      entries++;
      report(false);
      switch (inode.kind) {
        case InodeKind.Dir:
          mkdirSync(p, { mode: 0o700 });
          stats.directories++;
          stack.push({ path: p, serial: childSerial });
          continue;
        case InodeKind.File: {
          const first = linked.get(childSerial);
          if (first) {
            linkSync(first, p);
            stats.hardLinks++;
            continue;
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
          if (inode.nlink > 1) linked.set(childSerial, p);
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
  }
  for (let i = dirs.length - 1; i >= 0; i--) applyMeta(dirs[i]!.path, dirs[i]!.inode, i === 0);
  report(true);
  return stats;
}
