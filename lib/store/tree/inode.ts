/**
 * Inode records: the values of the inode table, keyed by serial. A record carries everything a
 * file system state needs about one inode; names live in directory trees, so editing a file
 * never rewrites its ancestors.
 */
import { ByteReader, ByteWriter } from '../../format/bytes.js';
import { LayerFsError } from '../../errors.js';

export enum InodeKind {
  File = 1,
  Dir = 2,
  Symlink = 3,
  Fifo = 4,
  CharDev = 5,
  BlockDev = 6,
}

/** The name of each inode kind in listings, diffs and status (the SDK's EntryKind). */
export const INODE_KIND_NAMES = {
  [InodeKind.File]: 'file',
  [InodeKind.Dir]: 'dir',
  [InodeKind.Symlink]: 'symlink',
  [InodeKind.Fifo]: 'fifo',
  [InodeKind.CharDev]: 'chardev',
  [InodeKind.BlockDev]: 'blockdev',
} as const;

export enum ContentForm {
  /** Empty file or empty directory. */
  None = 0,
  /** Small file: one blob object. Directory: the root page of its name tree. */
  Whole = 1,
  /** Large file: the root of an extent tree over FastCDC chunks. */
  Extents = 2,
}

/**
 * A regular file of this many bytes or more is stored as Extents (FastCDC chunks under an extent
 * tree), a smaller one as Whole (one blob). Imports, records and the chunk-delta source all split
 * at this size, so it lives beside the content forms it chooses between.
 */
export const SMALL_FILE_THRESHOLD = 128 * 1024;

/** Entries of a tree by kind, as an import, export or tar stream counts them. */
export interface TreeCounts {
  files: number;
  directories: number;
  symlinks: number;
  specials: number;
  hardLinks: number;
  bytes: number;
}

export interface Xattr {
  name: Buffer;
  value: Buffer;
}

/** Whether two canonical xattr lists (sorted by name, as records hold them) are equal. */
export function sameXattrs(a: readonly Xattr[], b: readonly Xattr[]): boolean {
  return a.length === b.length && a.every((x, i) => x.name.equals(b[i]!.name) && x.value.equals(b[i]!.value));
}

export interface Inode {
  kind: InodeKind;
  /** Permission bits including setuid, setgid and sticky (st_mode & 0o7777). */
  mode: number;
  uid: number;
  gid: number;
  mtimeNs: bigint;
  /** Content length for files, target length for symlinks, 0 otherwise. */
  size: number;
  /** Number of directory entries naming this inode (hard links); 1 for directories. Derived from parents. */
  nlink: number;
  /**
   * Serials of the directories holding a name of this inode, ascending, one per name (a file
   * with two names in one directory lists it twice); empty for the root. They let a change found
   * in the inode table be turned into paths without walking the tree.
   */
  parents?: number[];
  form: ContentForm;
  content: Buffer | null;
  target?: Buffer;
  rdev?: number;
  xattrs: Xattr[];
}

export function encodeInode(n: Inode): Buffer {
  const w = new ByteWriter(64 + (n.target?.length ?? 0));
  w.u8(n.kind).uv(n.mode).uv(n.uid).uv(n.gid).sv64(n.mtimeNs).uv(n.size);
  // Parents as ascending deltas: canonical, and short for the usual single parent.
  // (A copy to sort only when there are two or more: the usual record has one parent, no xattrs.)
  const parents = n.parents === undefined ? [] : n.parents.length < 2 ? n.parents : [...n.parents].sort((a, b) => a - b);
  w.uv(parents.length);
  let prev = 0;
  for (let k = 0; k < parents.length; k++) {
    w.uv(parents[k]! - prev);
    prev = parents[k]!;
  }
  w.u8(n.form);
  if (n.form !== ContentForm.None) w.bytes(n.content!);
  if (n.kind === InodeKind.Symlink) w.lbytes(n.target!);
  if (n.kind === InodeKind.CharDev || n.kind === InodeKind.BlockDev) w.uv(n.rdev ?? 0);
  // Canonical: xattrs sorted by name bytes, no duplicates.
  const xs = n.xattrs.length < 2 ? n.xattrs : [...n.xattrs].sort((a, b) => Buffer.compare(a.name, b.name));
  w.uv(xs.length);
  for (let k = 0; k < xs.length; k++) w.lbytes(xs[k]!.name).lbytes(xs[k]!.value);
  return w.finish();
}

export function decodeInode(data: Buffer, serial: number): Inode {
  const r = new ByteReader(data, `inode ${serial}`);
  const kind = r.u8() as InodeKind;
  if (kind < InodeKind.File || kind > InodeKind.BlockDev) throw new LayerFsError('ERR_CORRUPT', `inode ${serial} has unknown kind ${kind}`);
  const n: Inode = {
    kind,
    mode: r.uv(),
    uid: r.uv(),
    gid: r.uv(),
    mtimeNs: r.sv64(),
    size: r.uv(),
    nlink: 1,
    form: ContentForm.None,
    content: null,
    xattrs: [],
  };
  const parents: number[] = new Array(r.count(1));
  let prev = 0;
  for (let i = 0; i < parents.length; i++) parents[i] = prev += r.uv();
  n.parents = parents;
  n.nlink = kind === InodeKind.Dir ? 1 : Math.max(1, parents.length);
  n.form = r.u8() as ContentForm;
  if (n.form > ContentForm.Extents) throw new LayerFsError('ERR_CORRUPT', `inode ${serial} has unknown content form ${n.form}`);
  if (n.form !== ContentForm.None) n.content = Buffer.from(r.bytes(32));
  if (kind === InodeKind.Symlink) n.target = Buffer.from(r.lbytes());
  if (kind === InodeKind.CharDev || kind === InodeKind.BlockDev) n.rdev = r.uv();
  const count = r.count(2);
  for (let i = 0; i < count; i++) n.xattrs.push({ name: Buffer.from(r.lbytes()), value: Buffer.from(r.lbytes()) });
  r.end();
  return n;
}

export function serialKey(serial: number): Buffer {
  const k = Buffer.allocUnsafe(8);
  // Two 32-bit halves: the bytes of writeBigUInt64BE(BigInt(serial)) without its bigints.
  k.writeUInt32BE(Math.floor(serial / 0x100000000), 0);
  k.writeUInt32BE(serial >>> 0, 4);
  return k;
}

/** The serial of an inode-table key: exactly 8 bytes, a safe integer (a forged key may be neither). */
export function keySerial(key: Buffer): number {
  if (key.length !== 8) throw new LayerFsError('ERR_CORRUPT', `inode table key of ${key.length} bytes (8 expected)`);
  const n = Number(key.readBigUInt64BE(0));
  if (!Number.isSafeInteger(n)) throw new LayerFsError('ERR_CORRUPT', `inode table key ${key.toString('hex')} is past the largest serial`);
  return n;
}

export function encodeSerial(serial: number): Buffer {
  return new ByteWriter(10).uv(serial).finish();
}

export function decodeSerial(v: Buffer): number {
  const r = new ByteReader(v, 'directory entry');
  const s = r.uv();
  r.end();
  return s;
}

/** Kind letter used in listings: like ls -l's first column. */
export function kindLetter(kind: InodeKind): string {
  return ['?', '-', 'd', 'l', 'p', 'c', 'b'][kind] ?? '?';
}
