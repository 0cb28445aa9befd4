/**
 * A state as a POSIX (pax) tar stream, deterministic: entries in tree order (each directory
 * before its children, names sorted by bytes), numeric owners only, no wall-clock time. A pax
 * extended header carries what ustar cannot: long or non-ASCII names and link targets
 * (exact bytes), nanosecond mtimes, xattrs (SCHILY.xattr.*, as GNU tar reads them), large
 * sizes and ids. Later names of a hard-linked file are link entries to its first name. The
 * root is the entry "./", so extracting gives the target directory the root's metadata.
 */
import { LayerFsError } from '../errors.js';
import { InodeKind, type Inode, type TreeCounts } from './tree/inode.js';
import { ROOT_SERIAL } from './tree/root.js';
import type { FsView } from './tree/view.js';
import { checkStoredName } from './export.js';

export const BLOCK = 512;
const MAX_OCTAL_8 = 0o7777777;
const MAX_OCTAL_12 = 0o77777777777;

const TYPE: Record<InodeKind, string> = {
  [InodeKind.File]: '0',
  [InodeKind.Symlink]: '2',
  [InodeKind.CharDev]: '3',
  [InodeKind.BlockDev]: '4',
  [InodeKind.Dir]: '5',
  [InodeKind.Fifo]: '6',
};

export type TarStats = TreeCounts;

/** One pax record: "<len> key=value\n", len counting itself. */
function paxRecord(key: string, value: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(` ${key}=`), value, Buffer.from('\n')]);
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return Buffer.concat([Buffer.from(String(len)), body]);
}

function octal(buf: Buffer, off: number, width: number, v: number): void {
  buf.write(v.toString(8).padStart(width - 1, '0') + '\0', off, width, 'latin1');
}

function ustarHeader(name: Buffer, h: { mode: number; uid: number; gid: number; size: number; mtime: number; type: string; link: Buffer; devmajor: number; devminor: number }): Buffer {
  const b = Buffer.alloc(BLOCK);
  name.copy(b, 0, 0, Math.min(100, name.length));
  octal(b, 100, 8, h.mode & 0o7777);
  octal(b, 108, 8, Math.min(h.uid, MAX_OCTAL_8));
  octal(b, 116, 8, Math.min(h.gid, MAX_OCTAL_8));
  octal(b, 124, 12, Math.min(h.size, MAX_OCTAL_12));
  octal(b, 136, 12, Math.max(0, Math.min(h.mtime, MAX_OCTAL_12)));
  b.write(h.type, 156, 1, 'latin1');
  h.link.copy(b, 157, 0, Math.min(100, h.link.length));
  b.write('ustar\x0000', 257, 8, 'latin1');
  octal(b, 329, 8, h.devmajor);
  octal(b, 337, 8, h.devminor);
  b.fill(0x20, 148, 156);
  let sum = 0;
  for (const x of b) sum += x;
  b.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'latin1');
  return b;
}

const pad = (n: number) => Buffer.alloc((BLOCK - (n % BLOCK)) % BLOCK);
const fitsUstar = (b: Buffer) => b.length <= 100 && !b.some((x) => x >= 0x80);

function mtimeText(ns: bigint): string {
  const neg = ns < 0n;
  const a = neg ? -ns : ns;
  const frac = (a % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${a / 1_000_000_000n}${frac ? `.${frac}` : ''}`;
}

/** Header blocks (pax and ustar) of one entry. */
function entryHeader(path: Buffer, inode: Inode, type: string, link: Buffer, size: number): Buffer[] {
  const records: Buffer[] = [];
  if (!fitsUstar(path)) records.push(paxRecord('path', path));
  if (!fitsUstar(link)) records.push(paxRecord('linkpath', link));
  if (inode.mtimeNs % 1_000_000_000n !== 0n || inode.mtimeNs < 0n) records.push(paxRecord('mtime', Buffer.from(mtimeText(inode.mtimeNs))));
  if (size > MAX_OCTAL_12) records.push(paxRecord('size', Buffer.from(String(size))));
  if (inode.uid > MAX_OCTAL_8) records.push(paxRecord('uid', Buffer.from(String(inode.uid))));
  if (inode.gid > MAX_OCTAL_8) records.push(paxRecord('gid', Buffer.from(String(inode.gid))));
  if (type !== '1') for (const x of inode.xattrs) records.push(paxRecord(`SCHILY.xattr.${x.name.toString('latin1')}`, x.value));
  const rdev = inode.rdev ?? 0;
  const fields = { mode: inode.mode, uid: inode.uid, gid: inode.gid, size, mtime: Number(inode.mtimeNs / 1_000_000_000n), type, link, devmajor: Math.floor(rdev / 256) & 0xfff, devminor: rdev & 0xff };
  const out: Buffer[] = [];
  if (records.length) {
    const body = Buffer.concat(records);
    const base = path.subarray(path.lastIndexOf(0x2f, path.length - 2) + 1);
    const paxName = Buffer.concat([Buffer.from('PaxHeaders/'), base]).subarray(0, 100);
    out.push(ustarHeader(paxName, { ...fields, size: body.length, type: 'x', link: Buffer.alloc(0) }), body, pad(body.length));
  }
  out.push(ustarHeader(path, fields));
  return out;
}

/** The tar stream of a state, piece by piece (file contents are never held whole). */
export function* tarStream(view: FsView, stats: TarStats = { files: 0, directories: 0, symlinks: 0, specials: 0, hardLinks: 0, bytes: 0 }): Generator<Buffer> {
  const firstName = new Map<number, Buffer>();
  function* entry(path: Buffer, serial: number): Generator<Buffer> {
    const inode = view.inode(serial);
    switch (inode.kind) {
      case InodeKind.Dir: {
        stats.directories++;
        yield* entryHeader(path.length ? Buffer.concat([path, Buffer.from('/')]) : Buffer.from('./'), inode, '5', Buffer.alloc(0), 0);
        for (const e of view.readdir(inode)) {
          checkStoredName(e.name, path.toString() || '/');
          yield* entry(path.length ? Buffer.concat([path, Buffer.from('/'), e.name]) : e.name, e.serial);
        }
        return;
      }
      case InodeKind.File: {
        const first = firstName.get(serial);
        if (first) {
          stats.hardLinks++;
          yield* entryHeader(path, inode, '1', first, 0);
          return;
        }
        if (inode.nlink > 1) firstName.set(serial, path);
        stats.files++;
        stats.bytes += inode.size;
        yield* entryHeader(path, inode, '0', Buffer.alloc(0), inode.size);
        let n = 0;
        for (const piece of view.content(inode)) {
          n += piece.length;
          yield piece;
        }
        if (n !== inode.size) throw new LayerFsError('ERR_CORRUPT', `${path.toString()}: content is ${n} bytes, its record says ${inode.size}`, { path: path.toString(), hint: 'run layerfs verify' });
        yield pad(n);
        return;
      }
      case InodeKind.Symlink:
        stats.symlinks++;
        yield* entryHeader(path, inode, '2', inode.target!, 0);
        return;
      default:
        stats.specials++;
        yield* entryHeader(path, inode, TYPE[inode.kind], Buffer.alloc(0), 0);
    }
  }
  yield* entry(Buffer.alloc(0), ROOT_SERIAL);
  yield Buffer.alloc(2 * BLOCK);
}
