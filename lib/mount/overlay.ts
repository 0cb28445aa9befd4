/**
 * A live writable overlay over one stored state: the namespace and content a FUSE mount serves.
 *
 * Inodes are kept in memory keyed by serial (so FUSE inode numbers are serials, stable across
 * commits). Stored records and directory listings load lazily; a changed record stays in memory
 * until commit; file content lives in content.ts (stored chunks, spool, dirty pages).
 *
 * Operations are synchronous and throw FsError (positive errno). `commit()` writes only what
 * changed — changed records, names per directory, deleted serials — through NamespaceEditor,
 * publishes by compare-and-swap on the Branch head, and on success rebases the overlay onto the
 * new state. While a commit runs, mutating operations submitted through `run()` wait in a queue
 * and run, in order, once the commit is over: every Commit is a consistent cut.
 */
import { constants as fsc } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { branchRoot, EMPTY_NOTE, getBranch, publishReconciled, type CommitNote, type CommitRow, type ReconcileConflict, type Reconciliation } from '../history/index.js';
import { saveConflicts } from '../workspace/index.js';
import { ContentForm, INODE_KIND_NAMES, InodeKind, keySerial, NamespaceEditor, ROOT_SERIAL, TreeKind, type FsView, type Inode, type ObjectWriter, type Store, type WriteStats, type Xattr } from '../store/index.js';
import { ContentCache, FileData, MemoryBudget, spoolFactory, spoolMemoryBudget, type ContentBuild, type SpoolFactory, type StoredContent } from './content.js';
import { fail, FsError } from './errno.js';

export const NAME_MAX = 255;
/** Largest user xattr value accepted (Linux's XATTR_SIZE_MAX). */
export const XATTR_SIZE_MAX = 65536;
export const RENAME_NOREPLACE = 1;
export const RENAME_EXCHANGE = 2;
export const XATTR_CREATE = 1;
export const XATTR_REPLACE = 2;

const S_IFMT = 0o170000;
const S_ISGID = 0o2000;
const O_ACCMODE = 3;
const TYPE_BITS: Record<InodeKind, number> = {
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

interface Node {
  serial: number;
  kind: InodeKind;
  mode: number;
  uid: number;
  gid: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  atimeNs: bigint;
  /** One directory serial per name (a multiset); empty for the root and for unlinked inodes. */
  parents: number[];
  xattrs: Xattr[];
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
}

interface Handle {
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

/** A reconciling commit's report: paths combining both sides, compare-and-swap retries, time (ms). */
export interface OverlayReconciled {
  merged: string[];
  retries: number;
  ms: number;
}

export type OverlayCommitOutcome =
  | { outcome: 'Created'; commit: CommitRow; rootId: Buffer; previousHead: Buffer | null; write: WriteStats; build: ContentBuild & { records: number; deleted: number; names: number }; ms: number; reconciled?: OverlayReconciled }
  | { outcome: 'UpToDate'; head: Buffer | null; rootId: Buffer; ms: number }
  | { outcome: 'HeadMoved'; expected: Buffer | null; actual: Buffer | null; ms: number }
  | { outcome: 'Conflicted'; conflicts: ReconcileConflict[]; head: Buffer | null; ms: number };

export interface OverlayOptions {
  /** Directory for spool files (must not be inside any mount this process serves). */
  spoolDir?: string;
  spool?: SpoolFactory;
  /** Shared read cache of stored content (one per Store is best). */
  cache?: ContentCache;
  /** Bytes of written content kept in memory before spools move to files (default: spoolMemoryBudget(); 0: always files). */
  memoryBudget?: number;
  /** Owner of new inodes (default: this process). fuse-native does not pass the caller's. */
  uid?: number;
  gid?: number;
  /** Called once when the overlay goes from clean to changed (after mount or a commit). */
  onChange?: () => void;
  /** True while something outside (the kernel) still references an inode: an unlinked one then stays until `forget`. */
  retain?: (serial: number) => boolean;
}

/** Who creates an inode (the caller's credentials, when the transport knows them). */
export interface Owner {
  uid: number;
  gid: number;
}

interface CommitWrite {
  published: ReturnType<typeof publishReconciled>;
  root: Buffer;
  head: Buffer | null;
  write: WriteStats;
  reconciliation?: Reconciliation;
}

type Refused = { outcome: 'HeadMoved'; expected: Buffer | null; actual: Buffer | null } | { outcome: 'Conflicted'; conflicts: ReconcileConflict[]; head: Buffer | null; ms: number };

class RollBack {
  constructor(readonly outcome: Refused) {}
}

function nowNs(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}

function key(name: Buffer): string {
  return name.toString('latin1');
}

function checkName(name: Buffer): void {
  if (name.length === 0 || name.includes(0x2f) || name.includes(0) || (name.length === 1 && name[0] === 0x2e) || (name.length === 2 && name[0] === 0x2e && name[1] === 0x2e)) fail('EINVAL', 'bad name');
  if (name.length > NAME_MAX) fail('ENAMETOOLONG');
}

function sameHead(a: Buffer | null, b: Buffer | null): boolean {
  return (a === null && b === null) || (a !== null && b !== null && a.equals(b));
}

/** One changed path of an overlay (Workspace status). */
export interface OverlayChange {
  change: 'added' | 'deleted' | 'modified' | 'renamed';
  path: Buffer;
  oldPath?: Buffer;
  kind: string;
}

const SLASH = Buffer.from('/');
const CHANGE_KIND_NAMES: Partial<Record<InodeKind, string>> = INODE_KIND_NAMES;

export class Overlay {
  private view: FsView;
  private readonly nodes = new Map<number, Node>();
  /** Serials of the base state that no longer exist. */
  private readonly deleted = new Set<number>();
  /** Serials whose record differs from the base (or that are new). */
  private readonly dirtyRecords = new Set<number>();
  /**
   * New files renamed over a stored file (serial → the stored file's serial), as rsync and
   * package managers replace files: at commit the stored file's content is offered as the delta
   * base of the new content, as an edit in place would be.
   */
  private readonly replaced = new Map<number, number>();
  /** Name changes per directory since the base: key → serial (null = removed). */
  private readonly nameEdits = new Map<number, Map<string, { name: Buffer; serial: number | null }>>();
  private readonly handles = new Map<number, Handle>();
  private nextFh = 1;
  private nextSerial: number;
  private committing = false;
  private readonly waiting: (() => void)[] = [];
  private changedSinceBase = false;
  readonly cache: ContentCache;
  private readonly newSpool: SpoolFactory;
  private readonly budget: MemoryBudget;
  private readonly uid: number;
  private readonly gid: number;
  private readonly onChange: (() => void) | undefined;
  private readonly retain: ((serial: number) => boolean) | undefined;

  constructor(
    private readonly store: Store,
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
    this.uid = opts.uid ?? process.getuid?.() ?? 0;
    this.gid = opts.gid ?? process.getgid?.() ?? 0;
    this.onChange = opts.onChange;
    this.retain = opts.retain;
    this.nextSerial = this.maxStoredSerial() + 1;
    const root = this.node(ROOT_SERIAL);
    if (root.kind !== InodeKind.Dir) throw new LayerFsError('ERR_CORRUPT', 'the root of this state is not a directory');
  }

  /** The highest serial of the base state: the rightmost key of the inode table. */
  private maxStoredSerial(): number {
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
    return this.dirtyRecords.size > 0 || this.deleted.size > 0 || this.nameEdits.size > 0;
  }

  /** Counts of what would be committed now. */
  pending(): { records: number; deleted: number; directories: number } {
    return { records: this.dirtyRecords.size, deleted: this.deleted.size, directories: this.nameEdits.size };
  }

  /**
   * What changed since the base, per path, like a materialized Workspace's status: new inodes
   * are `added`, base inodes whose first name moved are `renamed`, other changed records
   * `modified`, and base inodes without a name left `deleted` (at their base path). The root is
   * left out; at most `limit` entries (sorted by path), `truncated` says when more exist.
   */
  changes(limit = 100_000): { changes: OverlayChange[]; truncated: boolean } {
    const out: OverlayChange[] = [];
    const kindOf = (k: InodeKind) => CHANGE_KIND_NAMES[k] ?? 'unknown';
    // Changed records, and inodes that only got a new name (a rename keeps the record).
    const serials = new Set(this.dirtyRecords);
    for (const edits of this.nameEdits.values()) for (const e of edits.values()) if (e.serial !== null) serials.add(e.serial);
    for (const serial of serials) {
      if (serial === ROOT_SERIAL) continue;
      const n = this.nodes.get(serial);
      if (!n || !this.alive(n)) continue;
      const path = this.pathOf(n);
      if (path === null) continue;
      if (!n.inBase) {
        out.push({ change: 'added', path, kind: kindOf(n.kind) });
        continue;
      }
      const old = this.view.pathOf(serial);
      if (old && !old.equals(path)) out.push({ change: 'renamed', path, oldPath: old, kind: kindOf(n.kind) });
      else if (this.dirtyRecords.has(serial)) out.push({ change: 'modified', path, kind: kindOf(n.kind) });
    }
    for (const serial of this.deleted) {
      const old = this.view.pathOf(serial);
      if (old) out.push({ change: 'deleted', path: old, kind: '' });
    }
    out.sort((a, b) => Buffer.compare(a.path, b.path));
    return { changes: out.slice(0, limit), truncated: out.length > limit };
  }

  /** The current path of a live inode through its first parent (null when unreachable). */
  private pathOf(n: Node): Buffer | null {
    const parts: Buffer[] = [];
    let cur = n;
    while (cur.serial !== ROOT_SERIAL) {
      const p = cur.parents[0];
      if (p === undefined) return null;
      const d = this.node(p);
      let name: string | undefined;
      for (const [k, s] of this.children(d)) {
        if (s === cur.serial) {
          name = k;
          break;
        }
      }
      if (name === undefined) return null;
      parts.push(Buffer.from(name, 'latin1'));
      cur = d;
    }
    return Buffer.concat(parts.reverse().flatMap((b, i) => (i ? [SLASH, b] : [b])));
  }

  private touched(): void {
    if (!this.changedSinceBase) {
      this.changedSinceBase = true;
      this.onChange?.();
    }
  }

  private markDirty(n: Node): void {
    this.dirtyRecords.add(n.serial);
    this.touched();
  }

  // -------------------------------------------------------------------------------------------
  // Nodes

  private fromRecord(serial: number, r: Inode): Node {
    const n: Node = {
      serial,
      kind: r.kind,
      mode: r.mode,
      uid: r.uid,
      gid: r.gid,
      mtimeNs: r.mtimeNs,
      ctimeNs: r.mtimeNs,
      atimeNs: r.mtimeNs,
      parents: [...(r.parents ?? [])],
      xattrs: r.xattrs.map((x) => ({ name: x.name, value: x.value })),
      inBase: true,
      open: 0,
    };
    if (r.kind === InodeKind.Symlink) n.target = r.target ?? Buffer.alloc(0);
    if (r.kind === InodeKind.CharDev || r.kind === InodeKind.BlockDev) n.rdev = r.rdev ?? 0;
    if (r.kind === InodeKind.File) n.data = new FileData({ form: r.form, id: r.content, size: r.size }, this.cache, this.newSpool, this.budget);
    return n;
  }

  private node(serial: number): Node {
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

  private dir(serial: number): Node {
    const n = this.node(serial);
    if (n.kind !== InodeKind.Dir) fail('ENOTDIR');
    return n;
  }

  private children(d: Node): Map<string, number> {
    if (d.children) return d.children;
    const m = new Map<string, number>();
    if (d.inBase) {
      const rec = this.view.inode(d.serial);
      for (const e of this.view.readdir(rec)) m.set(key(e.name), e.serial);
    }
    d.children = m;
    return m;
  }

  private newNode(kind: InodeKind, mode: number, parent: Node, owner?: Owner): Node {
    const t = nowNs();
    // BSD group semantics under a setgid directory, as Linux does.
    const setgidDir = (parent.mode & S_ISGID) !== 0;
    const n: Node = {
      serial: this.nextSerial++,
      kind,
      mode: mode & 0o7777,
      uid: owner?.uid ?? this.uid,
      gid: setgidDir ? parent.gid : (owner?.gid ?? this.gid),
      mtimeNs: t,
      ctimeNs: t,
      atimeNs: t,
      parents: [],
      xattrs: [],
      inBase: false,
      open: 0,
    };
    if (kind === InodeKind.Dir) {
      n.children = new Map();
      if (setgidDir) n.mode |= S_ISGID;
    }
    if (kind === InodeKind.File) n.data = new FileData(null, this.cache, this.newSpool, this.budget);
    this.nodes.set(n.serial, n);
    return n;
  }

  private bind(d: Node, name: Buffer, serial: number): void {
    const k = key(name);
    this.children(d).set(k, serial);
    let m = this.nameEdits.get(d.serial);
    if (!m) this.nameEdits.set(d.serial, (m = new Map()));
    m.set(k, { name, serial });
    this.touched();
  }

  private unbind(d: Node, name: Buffer): void {
    const k = key(name);
    this.children(d).delete(k);
    let m = this.nameEdits.get(d.serial);
    if (!m) this.nameEdits.set(d.serial, (m = new Map()));
    m.set(k, { name, serial: null });
    this.touched();
  }

  private dirChanged(d: Node): void {
    d.mtimeNs = d.ctimeNs = nowNs();
    this.markDirty(d);
  }

  private removeParent(n: Node, dir: number): void {
    const i = n.parents.indexOf(dir);
    if (i >= 0) n.parents.splice(i, 1);
    n.ctimeNs = nowNs();
    if (n.parents.length > 0) {
      this.markDirty(n);
      return;
    }
    this.drop(n);
  }

  /** The inode has no name left. */
  private drop(n: Node): void {
    if (n.inBase) this.deleted.add(n.serial);
    this.dirtyRecords.delete(n.serial);
    this.nameEdits.delete(n.serial);
    this.touched();
    if (n.open === 0 && !this.retain?.(n.serial)) this.free(n);
  }

  /** The kernel no longer references `serial`: an unlinked, closed inode goes now. */
  forget(serial: number): void {
    const n = this.nodes.get(serial);
    if (n && n.open === 0 && !this.alive(n)) this.free(n);
  }

  private free(n: Node): void {
    n.data?.dispose();
    this.nodes.delete(n.serial);
  }

  private alive(n: Node): boolean {
    return n.serial === ROOT_SERIAL || n.parents.length > 0;
  }

  // -------------------------------------------------------------------------------------------
  // Lookup

  lookup(parent: number, name: Buffer): number {
    const s = this.find(parent, name);
    if (s === undefined) fail('ENOENT');
    return s;
  }

  /** `lookup` without the throw: a name that is not there is undefined (every create asks first). */
  find(parent: number, name: Buffer): number | undefined {
    const d = this.dir(parent);
    if (name.length === 1 && name[0] === 0x2e) return parent;
    if (name.length === 2 && name[0] === 0x2e && name[1] === 0x2e) return d.parents[0] ?? ROOT_SERIAL;
    return this.children(d).get(key(name));
  }

  /** Resolves name components from the root, without following symlinks. */
  resolve(parts: Buffer[]): number {
    let s = ROOT_SERIAL;
    for (const p of parts) s = this.lookup(s, p);
    return s;
  }

  kindOf(serial: number): InodeKind {
    return this.node(serial).kind;
  }

  getattr(serial: number): Attr {
    const n = this.node(serial);
    const size = n.kind === InodeKind.File ? n.data!.size : n.kind === InodeKind.Symlink ? n.target!.length : n.kind === InodeKind.Dir ? 4096 : 0;
    return {
      ino: n.serial,
      mode: TYPE_BITS[n.kind] | n.mode,
      nlink: n.kind === InodeKind.Dir ? 1 : Math.max(n.parents.length, n.serial === ROOT_SERIAL ? 1 : 0),
      uid: n.uid,
      gid: n.gid,
      size,
      rdev: n.rdev ?? 0,
      blocks: Math.ceil(size / 512),
      atimeNs: n.atimeNs,
      mtimeNs: n.mtimeNs,
      ctimeNs: n.ctimeNs,
    };
  }

  readdir(serial: number): DirEntryAttr[] {
    const d = this.dir(serial);
    const out: DirEntryAttr[] = [];
    for (const [k, s] of this.children(d)) out.push({ name: Buffer.from(k, 'latin1'), serial: s, attr: this.getattr(s) });
    return out;
  }

  readlink(serial: number): Buffer {
    const n = this.node(serial);
    if (n.kind !== InodeKind.Symlink) fail('EINVAL');
    return n.target!;
  }

  access(serial: number, mode: number): void {
    const n = this.node(serial);
    if (mode & fsc.X_OK && n.kind !== InodeKind.Dir && (n.mode & 0o111) === 0) fail('EACCES');
  }

  statfs(): { bsize: number; frsize: number; blocks: number; bfree: number; bavail: number; files: number; ffree: number; favail: number; namemax: number } {
    const big = 0x7fffffff;
    return { bsize: 4096, frsize: 4096, blocks: big, bfree: big >>> 1, bavail: big >>> 1, files: big, ffree: big - this.nextSerial, favail: big - this.nextSerial, namemax: NAME_MAX };
  }

  // -------------------------------------------------------------------------------------------
  // Namespace changes

  private checkNew(d: Node, name: Buffer): void {
    checkName(name);
    // A directory removed while something still refers to it takes no new names.
    if (!this.alive(d)) fail('ENOENT');
    if (this.children(d).has(key(name))) fail('EEXIST');
  }

  mkdir(parent: number, name: Buffer, mode: number, owner?: Owner): number {
    const d = this.dir(parent);
    this.checkNew(d, name);
    const n = this.newNode(InodeKind.Dir, mode, d, owner);
    n.parents.push(d.serial);
    this.bind(d, name, n.serial);
    this.markDirty(n);
    this.dirChanged(d);
    return n.serial;
  }

  /** Creates a fifo or device node, or a regular file (mknod with S_IFREG). */
  mknod(parent: number, name: Buffer, mode: number, rdev: number, owner?: Owner): number {
    const type = mode & S_IFMT;
    const kind =
      type === fsc.S_IFIFO ? InodeKind.Fifo : type === fsc.S_IFCHR ? InodeKind.CharDev : type === fsc.S_IFBLK ? InodeKind.BlockDev : type === fsc.S_IFREG || type === 0 ? InodeKind.File : null;
    if (kind === null) fail('EOPNOTSUPP', 'sockets cannot be stored in a state');
    const d = this.dir(parent);
    this.checkNew(d, name);
    const n = this.newNode(kind, mode, d, owner);
    if (kind === InodeKind.CharDev || kind === InodeKind.BlockDev) n.rdev = rdev;
    n.parents.push(d.serial);
    this.bind(d, name, n.serial);
    this.markDirty(n);
    this.dirChanged(d);
    return n.serial;
  }

  /** Creates a regular file and opens it. With excl false an existing file is opened instead. */
  create(parent: number, name: Buffer, mode: number, flags: number = fsc.O_RDWR, excl = true, owner?: Owner): { serial: number; fh: number } {
    const d = this.dir(parent);
    checkName(name);
    const existing = this.children(d).get(key(name));
    if (existing !== undefined) {
      if (excl) fail('EEXIST');
      return { serial: existing, fh: this.open(existing, flags) };
    }
    const serial = this.mknod(parent, name, (mode & 0o7777) | fsc.S_IFREG, 0, owner);
    return { serial, fh: this.open(serial, flags) };
  }

  symlink(parent: number, name: Buffer, target: Buffer, owner?: Owner): number {
    if (target.length === 0) fail('ENOENT');
    if (target.length > 4095) fail('ENAMETOOLONG');
    const d = this.dir(parent);
    this.checkNew(d, name);
    const n = this.newNode(InodeKind.Symlink, 0o777, d, owner);
    n.target = Buffer.from(target);
    n.parents.push(d.serial);
    this.bind(d, name, n.serial);
    this.markDirty(n);
    this.dirChanged(d);
    return n.serial;
  }

  link(serial: number, parent: number, name: Buffer): void {
    const n = this.node(serial);
    if (n.kind === InodeKind.Dir) fail('EPERM');
    if (!this.alive(n)) fail('ENOENT');
    const d = this.dir(parent);
    this.checkNew(d, name);
    n.parents.push(d.serial);
    n.ctimeNs = nowNs();
    this.bind(d, name, n.serial);
    this.markDirty(n);
    this.dirChanged(d);
  }

  unlink(parent: number, name: Buffer): void {
    const d = this.dir(parent);
    const s = this.lookup(parent, name);
    const n = this.node(s);
    if (n.kind === InodeKind.Dir) fail('EISDIR');
    this.unbind(d, name);
    this.dirChanged(d);
    this.removeParent(n, d.serial);
  }

  rmdir(parent: number, name: Buffer): void {
    if (name.length === 1 && name[0] === 0x2e) fail('EINVAL');
    if (name.length === 2 && name[0] === 0x2e && name[1] === 0x2e) fail('ENOTEMPTY');
    const d = this.dir(parent);
    const s = this.lookup(parent, name);
    const n = this.node(s);
    if (n.kind !== InodeKind.Dir) fail('ENOTDIR');
    if (this.children(n).size > 0) fail('ENOTEMPTY');
    this.unbind(d, name);
    this.dirChanged(d);
    this.removeParent(n, d.serial);
  }

  /** True when `dir` is `ancestor` or lies below it. */
  private isUnder(dir: number, ancestor: number): boolean {
    let s: number | undefined = dir;
    for (let guard = 0; s !== undefined && guard < 100000; guard++) {
      if (s === ancestor) return true;
      if (s === ROOT_SERIAL) return false;
      s = this.node(s).parents[0];
    }
    return false;
  }

  rename(srcParent: number, srcName: Buffer, dstParent: number, dstName: Buffer, flags = 0): void {
    if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE) || (flags & RENAME_NOREPLACE && flags & RENAME_EXCHANGE)) fail('EINVAL');
    checkName(srcName);
    checkName(dstName);
    const sd = this.dir(srcParent);
    const dd = this.dir(dstParent);
    const ss = this.lookup(srcParent, srcName);
    const src = this.node(ss);
    const ds = this.children(dd).get(key(dstName));
    const dst = ds === undefined ? undefined : this.node(ds);
    if (flags & RENAME_EXCHANGE) {
      if (!dst) fail('ENOENT');
      if (src === dst) return;
      if (src.kind === InodeKind.Dir && this.isUnder(dd.serial, src.serial)) fail('EINVAL');
      if (dst.kind === InodeKind.Dir && this.isUnder(sd.serial, dst.serial)) fail('EINVAL');
      this.bind(sd, srcName, dst.serial);
      this.bind(dd, dstName, src.serial);
      this.reparent(src, sd.serial, dd.serial);
      this.reparent(dst, dd.serial, sd.serial);
      this.dirChanged(sd);
      if (dd !== sd) this.dirChanged(dd);
      return;
    }
    if (dst) {
      if (flags & RENAME_NOREPLACE) fail('EEXIST');
      // Two names of one inode: rename does nothing (POSIX).
      if (dst === src) return;
      if (src.kind === InodeKind.Dir) {
        if (dst.kind !== InodeKind.Dir) fail('ENOTDIR');
        if (this.children(dst).size > 0) fail('ENOTEMPTY');
      } else if (dst.kind === InodeKind.Dir) fail('EISDIR');
    }
    if (src.kind === InodeKind.Dir && this.isUnder(dd.serial, src.serial)) fail('EINVAL');
    if (dst) {
      if (src.kind === InodeKind.File && dst.kind === InodeKind.File && !src.inBase) {
        const stored = dst.inBase ? dst.serial : this.replaced.get(dst.serial);
        if (stored !== undefined) this.replaced.set(src.serial, stored);
      }
      this.unbind(dd, dstName);
      this.removeParent(dst, dd.serial);
    }
    this.unbind(sd, srcName);
    this.bind(dd, dstName, src.serial);
    this.reparent(src, sd.serial, dd.serial);
    this.dirChanged(sd);
    if (dd !== sd) this.dirChanged(dd);
  }

  private reparent(n: Node, from: number, to: number): void {
    n.ctimeNs = nowNs();
    if (from === to) return;
    const i = n.parents.indexOf(from);
    if (i >= 0) n.parents.splice(i, 1);
    n.parents.push(to);
    this.markDirty(n);
  }

  // -------------------------------------------------------------------------------------------
  // Metadata

  chmod(serial: number, mode: number): void {
    const n = this.node(serial);
    n.mode = mode & 0o7777;
    n.ctimeNs = nowNs();
    this.markDirty(n);
  }

  /** uid/gid of -1 (or 0xffffffff) leave that id unchanged. */
  chown(serial: number, uid: number, gid: number): void {
    const n = this.node(serial);
    if (uid !== -1 && uid !== 0xffffffff) n.uid = uid;
    if (gid !== -1 && gid !== 0xffffffff) n.gid = gid;
    n.ctimeNs = nowNs();
    this.markDirty(n);
  }

  /** Times in nanoseconds since the epoch; null leaves one unchanged. */
  utimens(serial: number, atimeNs: bigint | null, mtimeNs: bigint | null): void {
    const n = this.node(serial);
    if (atimeNs !== null) n.atimeNs = atimeNs;
    if (mtimeNs !== null) n.mtimeNs = mtimeNs;
    n.ctimeNs = nowNs();
    if (mtimeNs !== null) this.markDirty(n);
  }

  private checkXattrName(name: Buffer): void {
    if (name.length === 0 || name.length > 255) fail('ERANGE');
  }

  private static userXattr(name: Buffer): boolean {
    return name.length > 5 && name.subarray(0, 5).toString('latin1') === 'user.';
  }

  setxattr(serial: number, name: Buffer, value: Buffer, flags = 0): void {
    this.checkXattrName(name);
    // Only user.* attributes belong to a state; others (security.*, trusted.*, ACLs) are refused.
    if (!Overlay.userXattr(name)) fail('EOPNOTSUPP');
    if (value.length > XATTR_SIZE_MAX) fail('E2BIG');
    const n = this.node(serial);
    if (n.kind !== InodeKind.File && n.kind !== InodeKind.Dir) fail('EPERM');
    const i = n.xattrs.findIndex((x) => x.name.equals(name));
    if (i >= 0 && flags & XATTR_CREATE) fail('EEXIST');
    if (i < 0 && flags & XATTR_REPLACE) fail('ENODATA');
    const x = { name: Buffer.from(name), value: Buffer.from(value) };
    if (i >= 0) n.xattrs[i] = x;
    else n.xattrs.push(x);
    n.ctimeNs = nowNs();
    this.markDirty(n);
  }

  getxattr(serial: number, name: Buffer): Buffer {
    const v = this.xattr(serial, name);
    if (!v) fail('ENODATA');
    return v;
  }

  /** `getxattr` without the throw: undefined when the inode has no such attribute. */
  xattr(serial: number, name: Buffer): Buffer | undefined {
    return this.node(serial).xattrs.find((a) => a.name.equals(name))?.value;
  }

  listxattr(serial: number): Buffer[] {
    return this.node(serial).xattrs.map((x) => x.name);
  }

  removexattr(serial: number, name: Buffer): void {
    const n = this.node(serial);
    const i = n.xattrs.findIndex((x) => x.name.equals(name));
    if (i < 0) fail('ENODATA');
    n.xattrs.splice(i, 1);
    n.ctimeNs = nowNs();
    this.markDirty(n);
  }

  // -------------------------------------------------------------------------------------------
  // File content

  open(serial: number, flags: number): number {
    const n = this.node(serial);
    const acc = flags & O_ACCMODE;
    const writable = acc === fsc.O_WRONLY || acc === fsc.O_RDWR;
    if (n.kind === InodeKind.Dir && writable) fail('EISDIR');
    if (n.kind === InodeKind.Symlink) fail('ELOOP');
    if (n.kind === InodeKind.File && writable && flags & fsc.O_TRUNC) this.truncate(serial, 0);
    const fh = this.nextFh++;
    this.handles.set(fh, { serial, append: (flags & fsc.O_APPEND) !== 0, writable });
    n.open++;
    return fh;
  }

  private handle(fh: number): { h: Handle; n: Node } {
    const h = this.handles.get(fh);
    if (!h) fail('EBADF');
    const n = this.nodes.get(h.serial);
    if (!n) fail('EBADF');
    return { h, n };
  }

  serialOf(fh: number): number {
    return this.handle(fh).h.serial;
  }

  read(fh: number, dst: Buffer, len: number, pos: number): number {
    const { n } = this.handle(fh);
    if (n.kind !== InodeKind.File) fail('EISDIR');
    return n.data!.read(pos, Math.min(len, dst.length), dst);
  }

  write(fh: number, src: Buffer, pos: number): number {
    const { h, n } = this.handle(fh);
    if (n.kind !== InodeKind.File) fail('EISDIR');
    const data = n.data!;
    const at = h.append ? data.size : pos;
    if (at + src.length > Number.MAX_SAFE_INTEGER) fail('EFBIG');
    data.write(src, at);
    n.mtimeNs = n.ctimeNs = nowNs();
    this.markDirty(n);
    return src.length;
  }

  truncate(serial: number, size: number): void {
    const n = this.node(serial);
    if (n.kind === InodeKind.Dir) fail('EISDIR');
    if (n.kind !== InodeKind.File) fail('EINVAL');
    if (size < 0 || !Number.isSafeInteger(size)) fail('EINVAL');
    n.data!.truncate(size);
    n.mtimeNs = n.ctimeNs = nowNs();
    this.markDirty(n);
  }

  ftruncate(fh: number, size: number): void {
    this.truncate(this.handle(fh).h.serial, size);
  }

  fgetattr(fh: number): Attr {
    return this.getattr(this.handle(fh).h.serial);
  }

  release(fh: number): void {
    const h = this.handles.get(fh);
    if (!h) return;
    this.handles.delete(fh);
    const n = this.nodes.get(h.serial);
    if (!n) return;
    n.open--;
    if (n.open === 0 && !this.alive(n) && !this.retain?.(n.serial)) this.free(n);
  }

  get openHandles(): number {
    return this.handles.size;
  }

  // -------------------------------------------------------------------------------------------
  // Commit

  /** The stored record of the file `serial` was renamed over, if any (a hint: unreadable is none). */
  private predecessor(serial: number): Inode | undefined {
    const stored = this.replaced.get(serial);
    if (stored === undefined) return undefined;
    try {
      const old = this.view.inode(stored);
      return old.kind === InodeKind.File ? old : undefined;
    } catch (e) {
      if (e instanceof LayerFsError) return undefined;
      throw e;
    }
  }

  private record(n: Node, w: ObjectWriter, build: ContentBuild, contents: Map<number, StoredContent>): Inode {
    const rec: Inode = {
      kind: n.kind,
      mode: n.mode,
      uid: n.uid,
      gid: n.gid,
      mtimeNs: n.mtimeNs,
      size: 0,
      nlink: 1,
      parents: [...n.parents].sort((a, b) => a - b),
      form: ContentForm.None,
      content: null,
      xattrs: n.xattrs.map((x) => ({ name: x.name, value: x.value })),
    };
    switch (n.kind) {
      case InodeKind.File: {
        const predecessor = n.inBase ? undefined : this.predecessor(n.serial);
        const c = n.data!.store(w, build, predecessor);
        contents.set(n.serial, c);
        rec.size = c.size;
        rec.form = c.form;
        rec.content = c.id;
        break;
      }
      case InodeKind.Dir:
        // The editor applies this directory's name changes to its base tree.
        if (n.inBase) {
          const old = this.view.inode(n.serial);
          rec.form = old.form;
          rec.content = old.content;
        }
        break;
      case InodeKind.Symlink:
        rec.target = n.target!;
        rec.size = n.target!.length;
        break;
      case InodeKind.CharDev:
      case InodeKind.BlockDev:
        rec.rdev = n.rdev ?? 0;
        break;
      default:
        break;
    }
    return rec;
  }

  /**
   * Stores what changed and publishes it as the next Commit of the target Branch, synchronously:
   * nothing else runs on this thread meanwhile, so the Commit is a consistent cut. When the
   * head moved, the changes are reconciled with it (unless `strict`: HeadMoved) and the overlay
   * moves onto the merged state. HeadMoved and Conflicted store nothing and leave the overlay as
   * it was.
   */
  commitSync(note: CommitNote = EMPTY_NOTE, strict = false): OverlayCommitOutcome {
    return this.commitWith((fn) => this.store.writeSync(fn), note, strict);
  }

  /** commitSync for callers that want a promise; mutations submitted through run() meanwhile wait. */
  async commit(note: CommitNote = EMPTY_NOTE, strict = false): Promise<OverlayCommitOutcome> {
    return this.commitWith((fn) => this.store.write(fn), note, strict);
  }

  private commitWith<R extends OverlayCommitOutcome | Promise<OverlayCommitOutcome>>(
    write: (fn: (w: ObjectWriter) => CommitWrite) => CommitWrite | Promise<CommitWrite>,
    note: CommitNote,
    strict: boolean,
  ): R {
    if (this.committing) throw new LayerFsError('ERR_BUSY', 'a commit of this Workspace is already running');
    const t0 = performance.now();
    const target = this.target;
    if (!this.changed) {
      const b = getBranch(this.store, target.branchId);
      if (!b) throw new LayerFsError('ERR_NOT_FOUND', `the Branch ${toHex(target.branchId)} no longer exists`, { id: toHex(target.branchId) });
      const moved = !sameHead(b.headCommitId, target.expectedHead);
      if (strict && (moved || !b.baseLayerId.equals(target.expectedBase))) return { outcome: 'HeadMoved', expected: target.expectedHead, actual: b.headCommitId, ms: performance.now() - t0 } as R;
      // Nothing to publish, but the head moved: the overlay moves onto it, as after any commit.
      if (moved && b.baseLayerId.equals(target.expectedBase)) this.moveOnto(b.headCommitId, branchRoot(this.store, b));
      return { outcome: 'UpToDate', head: b.headCommitId, rootId: this.rootId, ms: performance.now() - t0 } as R;
    }
    this.committing = true;
    const contents = new Map<number, StoredContent>();
    const build = { bytesRead: 0, chunksHashed: 0, records: 0, deleted: 0, names: 0 };
    const finish = (result: CommitWrite): OverlayCommitOutcome => {
      this.rebase(result.root, contents);
      if (result.reconciliation) this.moved(result.reconciliation.renumbered);
      this.target = { ...target, expectedHead: result.head };
      const ms = performance.now() - t0;
      if (result.published.outcome === 'UpToDate') return { outcome: 'UpToDate', head: result.head, rootId: result.root, ms };
      if (result.published.outcome !== 'Created') throw new LayerFsError('ERR_CORRUPT', 'unexpected publish outcome');
      const rec = result.reconciliation;
      const out: OverlayCommitOutcome = { outcome: 'Created', commit: result.published.commit, rootId: result.root, previousHead: result.published.previousHead, write: result.write, build, ms };
      if (rec) out.reconciled = { merged: rec.merged, retries: rec.retries, ms: rec.ms };
      return out;
    };
    const fail = (e: unknown): OverlayCommitOutcome => {
      if (!(e instanceof RollBack)) throw e;
      if (e.outcome.outcome === 'Conflicted') {
        // Kept for `workspace conflicts`; the overlay keeps every change.
        if (target.workspaceId) saveConflicts(this.store, target.workspaceId, e.outcome.head, e.outcome.conflicts);
        return { ...e.outcome, ms: performance.now() - t0 };
      }
      return { ...e.outcome, ms: performance.now() - t0 };
    };
    const done = () => {
      this.committing = false;
      this.drain();
    };
    let r: CommitWrite | Promise<CommitWrite>;
    try {
      r = write((w) => this.writeCommit(w, target, build, contents, note, strict));
    } catch (e) {
      done();
      return fail(e) as R;
    }
    if (r instanceof Promise) {
      return r.then(finish, fail).finally(done) as R;
    }
    try {
      return finish(r) as R;
    } finally {
      done();
    }
  }

  /** Inside the write transaction: records, deletions, names, the root, then the compare-and-swap. */
  private writeCommit(w: ObjectWriter, target: CommitTarget, build: ContentBuild & { records: number; deleted: number; names: number }, contents: Map<number, StoredContent>, note: CommitNote, strict: boolean): CommitWrite {
    const store = this.store;
    const editor = new NamespaceEditor(this.view, store.pages, w);
    for (const serial of [...this.dirtyRecords].sort((a, b) => a - b)) {
      const n = this.nodes.get(serial);
      if (!n || !this.alive(n)) continue;
      const hinted = n.kind === InodeKind.File && n.data!.offersDeltaBases;
      editor.setInode(serial, this.record(n, w, build, contents), hinted);
      build.records++;
    }
    for (const s of this.deleted) editor.deleteInode(s);
    build.deleted = this.deleted.size;
    for (const [dir, m] of this.nameEdits) {
      const d = this.nodes.get(dir);
      if (!d || !this.alive(d) || d.kind !== InodeKind.Dir) continue;
      for (const { name, serial } of m.values()) editor.setName(dir, name, serial);
      build.names += m.size;
    }
    const own = editor.finish();
    const published = publishReconciled(store, w, { branchId: target.branchId, root: own, baseRoot: this.rootId, expectedHead: target.expectedHead, expectedBase: target.expectedBase, note, strict });
    if (published.outcome === 'HeadMoved' || published.outcome === 'Conflicted') throw new RollBack(published);
    const head = published.outcome === 'Created' ? published.commit.id : published.head;
    const root = published.root;
    if (target.workspaceId) {
      store.db.prepare('UPDATE workspaces SET base_root_id = ?, expected_head_id = ? WHERE id = ?').run(root, head, target.workspaceId);
      store.db.prepare('DELETE FROM workspace_conflicts WHERE workspace_id = ?').run(target.workspaceId);
    }
    return { published, root, head, write: { ...w.stats }, ...(published.reconciliation ? { reconciliation: published.reconciliation } : {}) };
  }

  private drain(): void {
    while (this.waiting.length > 0 && !this.committing) {
      const fn = this.waiting.shift()!;
      try {
        fn();
      } catch {
        /* each queued operation answers its own caller */
      }
    }
  }

  /** The committed state becomes the base: spools go, records and names are clean again. */
  private rebase(root: Buffer, contents: Map<number, StoredContent>): void {
    for (const [serial, c] of contents) this.nodes.get(serial)?.data?.rebase(c);
    for (const serial of this.dirtyRecords) {
      const n = this.nodes.get(serial);
      if (n && this.alive(n)) n.inBase = true;
    }
    for (const n of this.nodes.values()) if (!this.alive(n)) n.inBase = false;
    this.deleted.clear();
    this.dirtyRecords.clear();
    this.replaced.clear();
    this.nameEdits.clear();
    this.view = this.store.view(root);
    this.rootId = root;
    this.changedSinceBase = false;
  }

  /**
   * After a reconciling commit the base is the merged state, which holds the head's changes too:
   * cached inodes may be stale, so closed ones are dropped (they load again from the new base on
   * use) and open ones refresh their names; an inode the merge renumbered moves to its new serial.
   */
  private moved(renumbered: Map<number, number>): void {
    for (const n of [...this.nodes.values()]) {
      if (n.open === 0) {
        this.nodes.delete(n.serial);
        continue;
      }
      const to = renumbered.get(n.serial);
      if (to !== undefined) {
        this.nodes.delete(n.serial);
        for (const h of this.handles.values()) if (h.serial === n.serial) h.serial = to;
        n.serial = to;
        this.nodes.set(to, n);
      }
      n.children = undefined;
      try {
        n.parents = [...(this.view.inode(n.serial).parents ?? [])];
      } catch {
        n.parents = [];
      }
    }
    this.nextSerial = Math.max(this.nextSerial, this.maxStoredSerial() + 1);
  }

  private moveOnto(head: Buffer | null, root: Buffer): void {
    if (this.target.workspaceId) {
      const id = this.target.workspaceId;
      this.store.writeSync(() => this.store.db.prepare('UPDATE workspaces SET base_root_id = ?, expected_head_id = ? WHERE id = ?').run(root, head, id));
    }
    this.rebase(root, new Map());
    this.moved(new Map());
    this.target = { ...this.target, expectedHead: head };
  }

  /** Drops every spool file (the overlay is going away). */
  dispose(): void {
    for (const n of this.nodes.values()) n.data?.dispose();
    this.nodes.clear();
    this.handles.clear();
  }
}

export { FsError };
