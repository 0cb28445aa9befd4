/**
 * The overlay's namespace: lookup, attributes and link counts, and the POSIX operations that
 * change names (mkdir, mknod, create, symlink, link, unlink, rmdir, rename), with their errno
 * rules. Every name change goes through `bind`/`unbind` (overlay-nodes.ts), which records it
 * for the commit.
 */
import { constants as fsc } from 'node:fs';
import { InodeKind, ROOT_SERIAL } from '../store/index.js';
import { fail } from './errno.js';
import { OverlayContent } from './overlay-content.js';
import { addParent, dropParent, type Node } from './overlay-node.js';
import { key, nowNs, TYPE_BITS, type Attr, type DirEntryAttr, type Owner } from './overlay-nodes.js';

export const NAME_MAX = 255;
export const RENAME_NOREPLACE = 1;
export const RENAME_EXCHANGE = 2;
const S_IFMT = 0o170000;

function checkName(name: Buffer): void {
  if (name.length === 0 || name.includes(0x2f) || name.includes(0) || (name.length === 1 && name[0] === 0x2e) || (name.length === 2 && name[0] === 0x2e && name[1] === 0x2e)) fail('EINVAL', 'bad name');
  if (name.length > NAME_MAX) fail('ENAMETOOLONG');
}

export abstract class OverlayNamespace extends OverlayContent {
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

  /** Every (directory, name) that names `serial` (a scan of each parent directory: for rare callers). */
  namesOf(serial: number): { parent: number; name: Buffer }[] {
    const out: { parent: number; name: Buffer }[] = [];
    for (const parent of new Set(this.node(serial).parents)) {
      for (const [k, s] of this.children(this.dir(parent))) if (s === serial) out.push({ parent, name: Buffer.from(k, 'latin1') });
    }
    return out;
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
      mode: (n.socket ? fsc.S_IFSOCK : TYPE_BITS[n.kind]) | n.mode,
      nlink: n.kind === InodeKind.Dir ? (this.alive(n) ? 2 : 0) + this.subdirs(n) : Math.max(n.parents.length, n.serial === ROOT_SERIAL ? 1 : 0),
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

  protected checkNew(d: Node, name: Buffer): void {
    checkName(name);
    // A directory removed while something still refers to it takes no new names.
    if (!this.alive(d)) fail('ENOENT');
    if (this.children(d).has(key(name))) fail('EEXIST');
  }

  mkdir(parent: number, name: Buffer, mode: number, owner?: Owner): number {
    const d = this.dir(parent);
    this.checkNew(d, name);
    const n = this.newNode(InodeKind.Dir, mode, d, owner);
    addParent(n, d.serial);
    this.bind(d, name, n.serial);
    this.markDirty(n);
    this.dirChanged(d);
    return n.serial;
  }

  /** Creates a fifo, socket or device node, or a regular file (mknod with S_IFREG). */
  mknod(parent: number, name: Buffer, mode: number, rdev: number, owner?: Owner): number {
    const type = mode & S_IFMT;
    const socket = type === fsc.S_IFSOCK;
    const kind =
      type === fsc.S_IFIFO || socket ? InodeKind.Fifo : type === fsc.S_IFCHR ? InodeKind.CharDev : type === fsc.S_IFBLK ? InodeKind.BlockDev : type === fsc.S_IFREG || type === 0 ? InodeKind.File : null;
    if (kind === null) fail('EINVAL', 'not a file type mknod makes');
    const d = this.dir(parent);
    this.checkNew(d, name);
    const n = this.newNode(kind, mode, d, owner);
    // A bound Unix socket lives in the overlay only: a state cannot hold one (import skips them too).
    if (socket) n.socket = true;
    if (kind === InodeKind.CharDev || kind === InodeKind.BlockDev) n.rdev = rdev;
    addParent(n, d.serial);
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
    addParent(n, d.serial);
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
    addParent(n, d.serial);
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
  protected isUnder(dir: number, ancestor: number): boolean {
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
    const src = this.node(this.lookup(srcParent, srcName));
    const ds = this.children(dd).get(key(dstName));
    const dst = ds === undefined ? undefined : this.node(ds);
    if (flags & RENAME_EXCHANGE) return this.exchange(sd, srcName, src, dd, dstName, dst);
    if (!this.mayReplace(src, dd, dst, flags)) return;
    this.move(sd, srcName, src, dd, dstName, dst);
  }

  /** RENAME_EXCHANGE: the two names swap inodes; neither may end up inside itself. */
  private exchange(sd: Node, srcName: Buffer, src: Node, dd: Node, dstName: Buffer, dst: Node | undefined): void {
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
  }

  /**
   * The POSIX rules for a plain rename: fails with the errno the kernel would give, and returns
   * false when the rename must do nothing (two names of one inode).
   */
  private mayReplace(src: Node, dd: Node, dst: Node | undefined, flags: number): boolean {
    if (dst) {
      if (flags & RENAME_NOREPLACE) fail('EEXIST');
      // Two names of one inode: rename does nothing (POSIX).
      if (dst === src) return false;
      if (src.kind === InodeKind.Dir) {
        if (dst.kind !== InodeKind.Dir) fail('ENOTDIR');
        if (this.children(dst).size > 0) fail('ENOTEMPTY');
      } else if (dst.kind === InodeKind.Dir) fail('EISDIR');
    }
    if (src.kind === InodeKind.Dir && this.isUnder(dd.serial, src.serial)) fail('EINVAL');
    return true;
  }

  /** Moves `src` to its new name, dropping whatever `dst` was there. */
  private move(sd: Node, srcName: Buffer, src: Node, dd: Node, dstName: Buffer, dst: Node | undefined): void {
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

  protected reparent(n: Node, from: number, to: number): void {
    n.ctimeNs = nowNs();
    if (from === to) return;
    dropParent(n, from);
    addParent(n, to);
    this.markDirty(n);
  }
}
