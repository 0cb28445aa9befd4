/**
 * The overlay's state and its inodes: the in-memory nodes keyed by serial (FUSE inode numbers
 * are serials, stable across commits), loaded lazily from the base state; the edits since the
 * base (changed records, deleted serials, directories whose names changed); and the small
 * operations every part of the overlay builds on (binding names, dropping an inode that lost its
 * last name). The node itself is overlay-node.ts. The parts above it: overlay-content.ts
 * (metadata, xattrs, open files), overlay-namespace.ts (lookup and the POSIX namespace
 * operations), overlay-status.ts (what changed, per path) and overlay-commit.ts (storing and
 * publishing the changes).
 */
import { constants as fsc } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { realtimeNs } from '../native/info.js';
import { InodeKind, keySerial, ROOT_SERIAL, SerialMap, SerialObjectMap, SerialSet, TreeKind, type FsView, type Inode, type Store } from '../store/index.js';
import { dropParent, makeNode, parentsOf, type Node } from './overlay-node.js';
import { ContentCache, FileData, type FileContext } from './content.js';
import { fail } from './errno.js';
import { MemoryBudget, spoolFactory, spoolMemoryBudget, type SpoolFactory } from './spool.js';

const S_ISGID = 0o2000;
export const TYPE_BITS: Record<InodeKind, number> = {
  [InodeKind.File]: fsc.S_IFREG,
  [InodeKind.Dir]: fsc.S_IFDIR,
  [InodeKind.Symlink]: fsc.S_IFLNK,
  [InodeKind.Fifo]: fsc.S_IFIFO,
  [InodeKind.CharDev]: fsc.S_IFCHR,
  [InodeKind.BlockDev]: fsc.S_IFBLK,
};

export interface Attr {
  ino: number;
  /** Type and permission bits, as st_mode. */
  mode: number;
  nlink: number;
  uid: number;
  gid: number;
  size: number;
  rdev: number;
  blocks: number;
  atimeNs: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

export interface DirEntryAttr {
  name: Buffer;
  serial: number;
  attr: Attr;
}

export interface Handle {
  serial: number;
  append: boolean;
  writable: boolean;
}

/** The Branch a Workspace commits to, and the head it expects (compare-and-swap). */
export interface CommitTarget {
  branchId: Buffer;
  expectedHead: Buffer | null;
  expectedBase: Buffer;
  /** The Workspace row to keep in step (base root, expected head), when there is one. */
  workspaceId?: Buffer | null;
}

export interface OverlayOptions {
  /** Directory for spool files (must not be inside any mount this process serves). */
  spoolDir?: string;
  spool?: SpoolFactory;
  /** Shared read cache of stored content (one per Store is best). */
  cache?: ContentCache;
  /** Bytes of written content kept in memory before spools move to files (default: spoolMemoryBudget(); 0: always files). */
  memoryBudget?: number;
  /** Owner of new inodes (default: this process); each request passes its caller's. */
  uid?: number;
  gid?: number;
  /** Called once when the overlay goes from clean to changed (after mount or a commit). */
  onChange?: () => void;
  /** Nodes held before trim() lets clean ones go (default 16384). */
  trimAfter?: number;
  /** True while something outside (the kernel) still references an inode: an unlinked one then stays until `forget`. */
  retain?: (serial: number) => boolean;
}

/** Who creates an inode (the caller's credentials, when the transport knows them). */
export interface Owner {
  uid: number;
  gid: number;
}

/** Now, for a file's times: the wall clock (native/addon.cc says why not performance.now()). */
export const nowNs: () => bigint = realtimeNs;

export function key(name: Buffer): string {
  return name.toString('latin1');
}

/** Nodes held before trim() looks for clean ones to let go. */
const TRIM_MIN = 16384;

/** Shared by every part of the overlay: its state since the base, and the inodes. */
export class OverlayNodes {
  protected view: FsView;
  protected readonly nodes = new SerialObjectMap<Node>();
  /** Serials of the base state that no longer exist. */
  protected readonly deleted = new SerialSet();
  /** Serials whose record differs from the base (or that are new). */
  protected readonly dirtyRecords = new SerialSet();
  /**
   * New files renamed over a stored file (serial → the stored file's serial), as rsync and
   * package managers replace files: at commit the stored file's content is offered as the delta
   * base of the new content, as an edit in place would be.
   */
  protected readonly replaced = new SerialMap();
  /**
   * Directories whose names changed since the base. The edits themselves are not kept: the
   * commit and status compare the directory's names with the base's listing (`nameEdits`). A
   * whole-tree change touches every directory, and a map of edits beside `children` held each
   * changed name twice (7.4 MiB of the daemon's heap for the real tree's release upgrade).
   */
  protected readonly namesChanged = new SerialSet();
  protected readonly handles = new Map<number, Handle>();
  /** trim() runs when more nodes than this are held (twice what the last one kept, at least TRIM_MIN). */
  private trimAt: number;
  private readonly trimMin: number;
  protected nextFh = 1;
  protected nextSerial: number;
  protected committing = false;
  protected readonly waiting: (() => void)[] = [];
  protected changedSinceBase = false;
  readonly cache: ContentCache;
  protected readonly newSpool: SpoolFactory;
  protected readonly budget: MemoryBudget;
  /** What every FileData of this overlay shares. */
  private readonly files: FileContext;
  protected readonly uid: number;
  protected readonly gid: number;
  protected readonly onChange: (() => void) | undefined;
  protected readonly retain: ((serial: number) => boolean) | undefined;

  constructor(
    protected readonly store: Store,
    public rootId: Buffer,
    public target: CommitTarget,
    opts: OverlayOptions = {},
  ) {
    this.view = store.view(rootId);
    this.cache = opts.cache ?? new ContentCache(store.objects);
    if (opts.spool) this.newSpool = opts.spool;
    else if (opts.spoolDir) this.newSpool = spoolFactory(opts.spoolDir);
    else throw new LayerFsError('ERR_INVALID_ARGUMENT', 'an overlay needs a spool directory');
    this.budget = new MemoryBudget(opts.memoryBudget ?? spoolMemoryBudget());
    this.files = { cache: this.cache, newSpool: this.newSpool, budget: this.budget };
    this.uid = opts.uid ?? process.getuid?.() ?? 0;
    this.gid = opts.gid ?? process.getgid?.() ?? 0;
    this.onChange = opts.onChange;
    this.retain = opts.retain;
    this.trimMin = this.trimAt = opts.trimAfter ?? TRIM_MIN;
    this.nextSerial = this.maxStoredSerial() + 1;
    const root = this.node(ROOT_SERIAL);
    if (root.kind !== InodeKind.Dir) throw new LayerFsError('ERR_CORRUPT', 'the root of this state is not a directory');
  }

  /** The highest serial of the base state: the rightmost key of the inode table. */
  protected maxStoredSerial(): number {
    let page = this.store.pages.load(TreeKind.Inodes, this.view.inodesRoot);
    while (page.level > 0) page = this.store.pages.load(TreeKind.Inodes, page.vals[page.vals.length - 1]!);
    const last = page.keys[page.keys.length - 1];
    return last ? keySerial(last) : ROOT_SERIAL;
  }

  // -------------------------------------------------------------------------------------------
  // Scheduling

  /** True while a commit is taking its cut. */
  get busy(): boolean {
    return this.committing;
  }

  /** Runs fn now, or after the running commit when it mutates. */
  run(mutating: boolean, fn: () => void): void {
    if (mutating && this.committing) this.waiting.push(fn);
    else fn();
  }

  /** Uncommitted changes exist. */
  get changed(): boolean {
    return this.dirtyRecords.size > 0 || this.deleted.size > 0 || this.namesChanged.size > 0;
  }

  /** The records a commit now would write: changed and deleted inodes. */
  get pendingRecords(): number {
    return this.dirtyRecords.size + this.deleted.size;
  }

  /** Counts of what would be committed now. */
  pending(): { records: number; deleted: number; directories: number } {
    return { records: this.dirtyRecords.size, deleted: this.deleted.size, directories: this.namesChanged.size };
  }

  protected touched(): void {
    if (!this.changedSinceBase) {
      this.changedSinceBase = true;
      this.onChange?.();
    }
  }

  protected markDirty(n: Node): void {
    this.dirtyRecords.add(n.serial);
    this.touched();
  }

  // -------------------------------------------------------------------------------------------
  // Nodes

  protected fromRecord(serial: number, r: Inode): Node {
    const n = makeNode(serial, r.kind, r.mode, r.uid, r.gid, r.mtimeNs, true);
    n.parents = parentsOf(r);
    if (r.xattrs.length > 0) n.xattrs = r.xattrs.map((x) => ({ name: x.name, value: x.value }));
    if (r.kind === InodeKind.Symlink) n.target = r.target ?? Buffer.alloc(0);
    if (r.kind === InodeKind.CharDev || r.kind === InodeKind.BlockDev) n.rdev = r.rdev ?? 0;
    if (r.kind === InodeKind.File) n.data = new FileData({ form: r.form, id: r.content, size: r.size }, this.files);
    return n;
  }

  protected node(serial: number): Node {
    const hit = this.nodes.get(serial);
    if (hit) return hit;
    if (this.deleted.has(serial)) fail('ENOENT');
    let rec: Inode;
    try {
      rec = this.view.inode(serial);
    } catch (e) {
      if (e instanceof LayerFsError && e.code === 'ERR_CORRUPT') fail('EIO', e.message);
      throw e;
    }
    const n = this.fromRecord(serial, rec);
    this.nodes.set(serial, n);
    return n;
  }

  protected dir(serial: number): Node {
    const n = this.node(serial);
    if (n.kind !== InodeKind.Dir) fail('ENOTDIR');
    return n;
  }

  protected children(d: Node): Map<string, number> {
    if (d.children) return d.children;
    const m = new Map<string, number>();
    if (d.inBase) {
      const rec = this.view.inode(d.serial);
      for (const e of this.view.readdir(rec)) m.set(key(e.name), e.serial);
    }
    d.children = m;
    return m;
  }

  protected newNode(kind: InodeKind, mode: number, parent: Node, owner?: Owner): Node {
    const t = nowNs();
    // BSD group semantics under a setgid directory, as Linux does.
    const setgidDir = (parent.mode & S_ISGID) !== 0;
    const n = makeNode(this.nextSerial++, kind, mode & 0o7777, owner?.uid ?? this.uid, setgidDir ? parent.gid : (owner?.gid ?? this.gid), t, false);
    if (kind === InodeKind.Dir) {
      n.children = new Map();
      if (setgidDir) n.mode |= S_ISGID;
    }
    if (kind === InodeKind.File) n.data = new FileData(null, this.files);
    this.nodes.set(n.serial, n);
    return n;
  }

  /** The number of subdirectories of `d`, counted once from the listing and kept by bind/unbind. */
  protected subdirs(d: Node): number {
    if (d.subdirs === undefined) {
      let n = 0;
      for (const s of this.children(d).values()) if (this.isDir(s)) n++;
      d.subdirs = n;
    }
    return d.subdirs;
  }

  /** Whether a serial is a directory, without caching a Node for it (counting a large listing). */
  private isDir(serial: number): boolean {
    const n = this.nodes.get(serial);
    if (n) return n.kind === InodeKind.Dir;
    try {
      return this.view.inode(serial).kind === InodeKind.Dir;
    } catch {
      return false;
    }
  }

  private countSubdir(d: Node, serial: number | undefined, delta: 1 | -1): void {
    if (d.subdirs !== undefined && serial !== undefined && this.isDir(serial)) d.subdirs += delta;
  }

  protected bind(d: Node, name: Buffer, serial: number): void {
    const k = key(name);
    const children = this.children(d);
    this.countSubdir(d, children.get(k), -1);
    this.countSubdir(d, serial, 1);
    children.set(k, serial);
    this.namesChanged.add(d.serial);
    this.touched();
  }

  protected unbind(d: Node, name: Buffer): void {
    const k = key(name);
    const children = this.children(d);
    this.countSubdir(d, children.get(k), -1);
    children.delete(k);
    this.namesChanged.add(d.serial);
    this.touched();
  }

  /**
   * The name edits of a directory in `namesChanged` against the base: each name whose serial
   * differs (new names included), then each base name gone (null). A name bound again to the
   * inode it had in the base, and a name made and removed since (rsync's temporary names), is
   * no edit. A bound socket's name counts as absent (no state records sockets): over a stored
   * name it removes that name.
   */
  protected *nameEdits(d: Node): Generator<[string, number | null]> {
    const children = this.children(d);
    const base = new Map<string, number>();
    if (d.inBase) for (const e of this.view.readdir(this.view.inode(d.serial))) base.set(key(e.name), e.serial);
    for (const [k, serial] of children) {
      const now = this.nodes.get(serial)?.socket ? undefined : serial;
      if (base.get(k) !== now) yield [k, now ?? null];
    }
    for (const k of base.keys()) if (!children.has(k)) yield [k, null];
  }

  protected dirChanged(d: Node): void {
    d.mtimeNs = d.ctimeNs = nowNs();
    this.markDirty(d);
  }

  protected removeParent(n: Node, dir: number): void {
    dropParent(n, dir);
    n.ctimeNs = nowNs();
    if (n.parents.length > 0) {
      this.markDirty(n);
      return;
    }
    this.drop(n);
  }

  /** The inode has no name left. */
  protected drop(n: Node): void {
    if (n.inBase) this.deleted.add(n.serial);
    this.dirtyRecords.delete(n.serial);
    this.namesChanged.delete(n.serial);
    this.touched();
    if (n.open === 0 && !this.retain?.(n.serial)) this.free(n);
  }

  /** The kernel no longer references `serial`: an unlinked, closed inode goes now. */
  forget(serial: number): void {
    const n = this.nodes.get(serial);
    if (n && n.open === 0 && !this.alive(n)) this.free(n);
  }

  /**
   * Lets go of the nodes that say nothing the base does not (a tool walking a whole tree looks
   * up every inode, and a node each stayed for the overlay's life): node() loads them again.
   * Only between requests (the kernel backend calls it after each): no operation holds a Node then.
   */
  trim(): void {
    if (this.nodes.size <= this.trimAt || this.committing) return;
    this.nodes.retain((n) => !this.clean(n));
    this.trimAt = Math.max(this.trimMin, 2 * this.nodes.size);
  }

  /** The node equals what node() loads from the base: nothing changed, nothing open. */
  private clean(n: Node): boolean {
    if (!n.inBase || n.open !== 0 || n.socket || n.serial === ROOT_SERIAL) return false;
    if (this.dirtyRecords.has(n.serial) || this.namesChanged.has(n.serial)) return false;
    if (n.atimeNs !== n.mtimeNs || n.ctimeNs !== n.mtimeNs) return false;
    return !n.data || n.data.idle;
  }

  protected free(n: Node): void {
    n.data?.dispose();
    this.nodes.delete(n.serial);
  }

  protected alive(n: Node): boolean {
    return n.serial === ROOT_SERIAL || n.parents.length > 0;
  }
}
