/**
 * One state of a diff (diff.ts): memoized inode records, directory paths, and the paths of any
 * serial, found through `parents` and a reverse name map per directory built lazily.
 */
import { LayerFsError } from '../errors.js';
import { ByteReader } from '../format/bytes.js';
import { ContentForm, decodeInode, InodeKind, type Inode } from '../store/tree/inode.js';
import { lookup, TreeKind, type PageIO } from '../store/tree/pages.js';
import { ROOT_SERIAL } from '../store/tree/root.js';
import type { Store } from '../store/store.js';
import { diffTrees } from './diff-trees.js';

const EMPTY = Buffer.alloc(0);
const SLASH = 0x2f;

/** What a State needs of the diff running it: page reads and name indexes shared by both states. */
export interface NameSource {
  readonly io: PageIO;
  nameIndex(root: Buffer): NameIndex;
}

export function corrupt(message: string): LayerFsError {
  return new LayerFsError('ERR_CORRUPT', message);
}

export function serialKeyOf(serial: number): Buffer {
  const k = Buffer.allocUnsafe(8);
  k.writeBigUInt64BE(BigInt(serial));
  return k;
}

export function decodeDirSerial(v: Buffer): number {
  const r = new ByteReader(v, 'directory entry');
  const s = r.uv();
  r.end();
  return s;
}

export function joinPath(dir: Buffer, name: Buffer): Buffer {
  if (dir.length === 0) return Buffer.from(name);
  return Buffer.concat([dir, Buffer.of(SLASH), name]);
}

export function dirContent(n: Inode | null): Buffer | null {
  return n && n.kind === InodeKind.Dir && n.form !== ContentForm.None ? n.content : null;
}

export function sameId(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b);
}

/** Reverse name map of one directory name tree, filled by scanning only as far as needed. */
export class NameIndex {
  private readonly names = new Map<number, Buffer[]>();
  private readonly scan: Generator<{ key: Buffer; after: Buffer | undefined }>;
  private done = false;

  constructor(io: PageIO, root: Buffer) {
    this.scan = diffTrees(TreeKind.Directory, io, null, root);
  }

  /** The names (at least `want` of them, if there are) under which `serial` is listed. */
  namesOf(serial: number, want: number): Buffer[] {
    let got = this.names.get(serial);
    while ((got?.length ?? 0) < want && !this.done) {
      const r = this.scan.next();
      if (r.done) {
        this.done = true;
        break;
      }
      const s = decodeDirSerial(r.value.after!);
      const list = this.names.get(s);
      if (list) list.push(r.value.key);
      else this.names.set(s, [r.value.key]);
      if (s === serial) got = this.names.get(s);
    }
    return got ?? [];
  }
}

export class State {
  readonly inodesRoot: Buffer;
  private readonly inodes = new Map<number, Inode | null>();
  private readonly dirPaths = new Map<number, Buffer>();

  constructor(
    private readonly diff: NameSource,
    store: Store,
    rootId: Buffer,
    readonly label: string,
  ) {
    this.inodesRoot = store.view(rootId).inodesRoot;
  }

  /** Records what the inode-table diff already decoded (null: absent in this state). */
  prime(serial: number, inode: Inode | null): void {
    this.inodes.set(serial, inode);
  }

  inode(serial: number): Inode | null {
    const hit = this.inodes.get(serial);
    if (hit !== undefined) return hit;
    const v = lookup(TreeKind.Inodes, this.diff.io, this.inodesRoot, serialKeyOf(serial));
    const n = v ? decodeInode(v, serial) : null;
    this.inodes.set(serial, n);
    return n;
  }

  /** The record of a serial this state's directories name: it must exist. */
  need(serial: number): Inode {
    const n = this.inode(serial);
    if (!n) throw corrupt(`${this.label} state: inode ${serial} is named by a directory but missing from the inode table`);
    return n;
  }

  private namesIn(dir: number, serial: number, want: number): Buffer[] {
    const d = this.need(dir);
    const root = dirContent(d);
    const names = root ? this.diff.nameIndex(root).namesOf(serial, want) : [];
    if (names.length < want) throw corrupt(`${this.label} state: inode ${serial} lists directory ${dir} as a parent, but the directory does not name it`);
    return names.slice(0, want);
  }

  /** Path of a directory, following parents up to the nearest directory with a known path. */
  dirPath(dir: number): Buffer {
    const chain: number[] = [];
    const onChain = new Set<number>();
    let cur = dir;
    while (!this.dirPaths.has(cur)) {
      if (cur === ROOT_SERIAL) {
        this.dirPaths.set(ROOT_SERIAL, EMPTY);
        break;
      }
      if (onChain.has(cur)) throw corrupt(`${this.label} state: directory ${cur} is its own ancestor`);
      chain.push(cur);
      onChain.add(cur);
      const n = this.need(cur);
      if (n.kind !== InodeKind.Dir) throw corrupt(`${this.label} state: inode ${cur} is a parent but not a directory`);
      const p = n.parents?.[0];
      if (p === undefined) throw corrupt(`${this.label} state: directory ${cur} has no parent`);
      cur = p;
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const c = chain[i]!;
      const parent = i === chain.length - 1 ? cur : chain[i + 1]!;
      this.dirPaths.set(c, joinPath(this.dirPaths.get(parent)!, this.namesIn(parent, c, 1)[0]!));
    }
    return this.dirPaths.get(dir)!;
  }

  /** Every path of a serial in this state (one per name: several for hard links). */
  pathsOf(serial: number): Buffer[] {
    if (serial === ROOT_SERIAL) return [EMPTY];
    const n = this.need(serial);
    if (n.kind === InodeKind.Dir) return [this.dirPath(serial)];
    const parents = n.parents ?? [];
    if (parents.length === 0) throw corrupt(`${this.label} state: inode ${serial} has no parent`);
    const out: Buffer[] = [];
    for (let i = 0; i < parents.length; ) {
      const p = parents[i]!;
      let count = 0;
      while (i < parents.length && parents[i] === p) {
        count++;
        i++;
      }
      const dir = this.dirPath(p);
      for (const name of this.namesIn(p, serial, count)) out.push(joinPath(dir, name));
    }
    return out;
  }
}
