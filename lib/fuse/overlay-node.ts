/**
 * One inode of an overlay (Node) and its compact form: a whole-tree change holds ~97,000 of them
 * in the mount daemon, so every field counts. overlay-nodes.ts keeps them by serial.
 */
import { InodeKind, type Inode, type Xattr } from '../store/index.js';
import type { FileData } from './content.js';

export interface Node {
  serial: number;
  readonly kind: InodeKind;
  mode: number;
  uid: number;
  gid: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  atimeNs: bigint;
  /**
   * One directory serial per name (a multiset); empty for the root and for unlinked inodes.
   * Replaced, never changed in place (addParent, dropParent): most are one serial, kept exact.
   */
  parents: readonly number[];
  /** Replaced, never changed in place: most inodes share NO_XATTRS. */
  xattrs: readonly Xattr[];
  target?: Buffer;
  rdev?: number;
  /** The serial exists in the current base state. */
  inBase: boolean;
  /** Directories: name (latin1 key) → serial, loaded on first use. */
  children?: Map<string, number>;
  /** Regular files. */
  data?: FileData;
  /** Open file handles; an unlinked inode lives until the last one is released. */
  open: number;
  /** A Unix socket bound here: a live inode (kind Fifo underneath) that commits and status leave out, as import does. */
  socket?: boolean;
  /** Directories: how many entries are directories, once counted (st_nlink is 2 + this). */
  subdirs?: number;
}

/** The xattrs of every inode that has none (a whole tree's inodes, each with an empty array, cost MiBs). */
export const NO_XATTRS: readonly Xattr[] = Object.freeze([]);
const NO_PARENTS: readonly number[] = Object.freeze([]);

/** Node.bits: in the base state, a bound socket, and the open handles counted above them. */
const IN_BASE = 1;
const SOCKET = 2;
const OPEN_UNIT = 4;

/**
 * A node in thirteen fields, every one present from the start (one shape): what only some kinds
 * have shares `body` (a file's content, a directory's names, a symlink's target) and `extra` (a
 * device's rdev, a directory's subdirectory count), and the flags and open count share `bits`.
 * A whole-tree change holds ~97,000 nodes: the eighteen fields they had cost 3.7 MiB more.
 */
class OverlayNode implements Node {
  mtimeNs: bigint;
  ctimeNs: bigint;
  atimeNs: bigint;
  parents: readonly number[] = NO_PARENTS;
  xattrs: readonly Xattr[] = NO_XATTRS;
  private bits: number;
  private body: FileData | Map<string, number> | Buffer | undefined = undefined;
  private extra: number | undefined = undefined;

  constructor(
    public serial: number,
    readonly kind: InodeKind,
    public mode: number,
    public uid: number,
    public gid: number,
    t: bigint,
    inBase: boolean,
  ) {
    this.mtimeNs = this.ctimeNs = this.atimeNs = t;
    this.bits = inBase ? IN_BASE : 0;
  }

  get inBase(): boolean {
    return (this.bits & IN_BASE) !== 0;
  }

  set inBase(v: boolean) {
    this.bits = v ? this.bits | IN_BASE : this.bits & ~IN_BASE;
  }

  get socket(): boolean | undefined {
    return (this.bits & SOCKET) !== 0 ? true : undefined;
  }

  set socket(v: boolean | undefined) {
    this.bits = v ? this.bits | SOCKET : this.bits & ~SOCKET;
  }

  get open(): number {
    return Math.floor(this.bits / OPEN_UNIT);
  }

  set open(v: number) {
    this.bits = (this.bits % OPEN_UNIT) + Math.max(0, v) * OPEN_UNIT;
  }

  get data(): FileData | undefined {
    return this.kind === InodeKind.File ? (this.body as FileData | undefined) : undefined;
  }

  set data(v: FileData | undefined) {
    if (this.kind === InodeKind.File) this.body = v;
  }

  get children(): Map<string, number> | undefined {
    return this.kind === InodeKind.Dir ? (this.body as Map<string, number> | undefined) : undefined;
  }

  set children(v: Map<string, number> | undefined) {
    if (this.kind === InodeKind.Dir) this.body = v;
  }

  get target(): Buffer | undefined {
    return this.kind === InodeKind.Symlink ? (this.body as Buffer | undefined) : undefined;
  }

  set target(v: Buffer | undefined) {
    if (this.kind === InodeKind.Symlink) this.body = v;
  }

  get rdev(): number | undefined {
    return this.kind === InodeKind.CharDev || this.kind === InodeKind.BlockDev ? this.extra : undefined;
  }

  set rdev(v: number | undefined) {
    if (this.kind === InodeKind.CharDev || this.kind === InodeKind.BlockDev) this.extra = v;
  }

  get subdirs(): number | undefined {
    return this.kind === InodeKind.Dir ? this.extra : undefined;
  }

  set subdirs(v: number | undefined) {
    if (this.kind === InodeKind.Dir) this.extra = v;
  }
}

export function makeNode(serial: number, kind: InodeKind, mode: number, uid: number, gid: number, t: bigint, inBase: boolean): Node {
  return new OverlayNode(serial, kind, mode, uid, gid, t, inBase);
}

/**
 * The parents of an inode with one name, shared by every inode in that directory: a whole-tree
 * change holds ~90,000 nodes, and an array each cost ~5 MiB of heap (parents are replaced, never
 * changed in place, so sharing is safe). Bounded: past ONE_PARENT_MAX directories it starts over.
 */
const oneParent = new Map<number, readonly number[]>();
const ONE_PARENT_MAX = 65536;

function onlyParent(dir: number): readonly number[] {
  let shared = oneParent.get(dir);
  if (!shared) {
    if (oneParent.size >= ONE_PARENT_MAX) oneParent.clear();
    shared = Object.freeze([dir]);
    oneParent.set(dir, shared);
  }
  return shared;
}

function parentList(dirs: readonly number[]): readonly number[] {
  return dirs.length === 0 ? NO_PARENTS : dirs.length === 1 ? onlyParent(dirs[0]!) : dirs;
}

export function addParent(n: Node, dir: number): void {
  n.parents = n.parents.length === 0 ? onlyParent(dir) : [...n.parents, dir];
}

/** Removes one occurrence of `dir` (a name of `n` in it went). */
export function dropParent(n: Node, dir: number): void {
  const i = n.parents.indexOf(dir);
  if (i < 0) return;
  n.parents = parentList(n.parents.filter((_, j) => j !== i));
}

export function parentsOf(r: Inode): readonly number[] {
  return r.parents ? parentList(r.parents.length > 1 ? [...r.parents] : r.parents) : NO_PARENTS;
}
