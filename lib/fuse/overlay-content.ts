/**
 * The overlay's metadata (mode, owner, times, user xattrs) and open files: handles, reads,
 * writes and truncation over the file content kept by content.ts.
 */
import { constants as fsc } from 'node:fs';
import { InodeKind, ROOT_SERIAL } from '../store/index.js';
import type { StoredContent } from './content.js';
import { fail } from './errno.js';
import { NO_XATTRS, type Node } from './overlay-node.js';
import { nowNs, OverlayNodes, type Attr, type Handle } from './overlay-nodes.js';

/** Largest user xattr value accepted (Linux's XATTR_SIZE_MAX). */
export const XATTR_SIZE_MAX = 65536;
export const XATTR_CREATE = 1;
export const XATTR_REPLACE = 2;
const O_ACCMODE = 3;

function checkXattrName(name: Buffer): void {
  if (name.length === 0 || name.length > 255) fail('ERANGE');
}

function userXattr(name: Buffer): boolean {
  return name.length > 5 && name.subarray(0, 5).toString('latin1') === 'user.';
}

/** Metadata and open files; `getattr` (a namespace matter: link counts) is above. */
export abstract class OverlayContent extends OverlayNodes {
  abstract getattr(serial: number): Attr;

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

  setxattr(serial: number, name: Buffer, value: Buffer, flags = 0): void {
    checkXattrName(name);
    // Only user.* attributes belong to a state; others (security.*, trusted.*, ACLs) are refused.
    if (!userXattr(name)) fail('EOPNOTSUPP');
    if (value.length > XATTR_SIZE_MAX) fail('E2BIG');
    const n = this.node(serial);
    if (n.kind !== InodeKind.File && n.kind !== InodeKind.Dir) fail('EPERM');
    const i = n.xattrs.findIndex((x) => x.name.equals(name));
    if (i >= 0 && flags & XATTR_CREATE) fail('EEXIST');
    if (i < 0 && flags & XATTR_REPLACE) fail('ENODATA');
    const x = { name: Buffer.from(name), value: Buffer.from(value) };
    n.xattrs = i >= 0 ? n.xattrs.map((y, j) => (j === i ? x : y)) : [...n.xattrs, x];
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
    n.xattrs = n.xattrs.length === 1 ? NO_XATTRS : n.xattrs.filter((_, j) => j !== i);
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

  protected handle(fh: number): { h: Handle; n: Node } {
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

  /**
   * The stored content an open file shows unchanged (no page written, not truncated): its bytes
   * are exactly those immutable objects, so another thread may answer reads of it through its
   * own Store connection (kernel-readers.ts). Null otherwise.
   */
  unchangedContent(fh: number): StoredContent | null {
    const h = this.handles.get(fh);
    const d = h === undefined ? undefined : this.nodes.get(h.serial)?.data;
    return d && !d.changed && d.base ? d.base : null;
  }

  /** The spool file holding an open file's content whole (FileData.wholeSpool), or null. */
  wholeSpool(fh: number): string | null {
    const h = this.handles.get(fh);
    return (h === undefined ? undefined : this.nodes.get(h.serial)?.data?.wholeSpool) ?? null;
  }

  /** Open handles of an inode. */
  openCount(serial: number): number {
    return this.nodes.get(serial)?.open ?? 0;
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

  /**
   * FSYNC of a handle: waits until its file's writes reached the spool file, and throws
   * (EIO, ENOSPC) when one of them failed, as kernel writeback reports a lost write.
   */
  flush(fh: number): void {
    this.handle(fh).n.data?.settle();
  }

  /** Before a commit: a typed error, nothing stored, when a write of a changed file was lost. */
  protected checkSpools(): void {
    for (const serial of this.dirtyRecords) this.nodes.get(serial)?.data?.check(() => this.pathOf(serial));
  }

  /** One path of a live inode (for messages), '(unlinked)' when it has none. */
  protected pathOf(serial: number): string {
    const names: string[] = [];
    for (let s = serial, depth = 0; s !== ROOT_SERIAL && depth < 4096; depth++) {
      const parent = this.nodes.get(s)?.parents[0];
      const dir = parent === undefined ? undefined : this.nodes.get(parent);
      const entry = dir?.children ? [...dir.children].find(([, v]) => v === s) : undefined;
      if (!entry) return '(unlinked)';
      names.push(entry[0]);
      s = parent!;
    }
    return '/' + names.reverse().map((n) => Buffer.from(n, 'latin1').toString()).join('/');
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
    else if (n.open === 0 && n.data?.changed) this.noteReleased(n.serial);
  }

  /** A changed file's last handle was released (overlay-prestore.ts may store it ahead of the commit). */
  protected noteReleased(_serial: number): void {}

  /**
   * Paths (from the root, '/'-led) of the files open for writing that have one; the writeback
   * cache's flush fsyncs them (kernel-flush.ts). Names that are not UTF-8 are left out.
   */
  writablePaths(): string[] {
    const out = new Set<string>();
    for (const h of this.handles.values()) {
      if (!h.writable) continue;
      const p = this.pathOf(h.serial);
      if (p !== '(unlinked)' && !p.includes('\ufffd')) out.add(p);
    }
    return [...out];
  }

  get openHandles(): number {
    return this.handles.size;
  }
}
