/**
 * fuse-native handlers over an Overlay: the only module that imports fuse-native.
 *
 * fuse-native 2.2.6 binds libfuse 2's high-level, path-based API, which shapes a few things:
 * - Every path is resolved from the root on each call (in-memory maps, cheap).
 * - `use_ino` makes the kernel show our serials as inode numbers.
 * - libfuse hides a file that is unlinked (or renamed over) while open by renaming it to
 *   `.fuse_hiddenXXXXXXXXYYYYYYYY`; that rename arrives here as an unlink that keeps the inode
 *   alive for its open handles, and the hidden name is served from a side table, so it never
 *   shows in listings and never reaches a Commit.
 * - Times cross the binding in milliseconds; utimens receives the access time in both
 *   arguments (a fuse-native bug) and libfuse 2 drops a change of only one of the two times.
 *   See docs/FUSE.md.
 * - The binding passes no caller credentials: new inodes belong to the daemon's user.
 *
 * Handlers never touch the file system synchronously except spool files (never in a mount):
 * a synchronous call into a mount served by this process would deadlock it.
 */
import Fuse from 'fuse-native';
import { constants as fsc } from 'node:fs';
import { E, FsError, negErrno } from './errno.js';
import { InodeKind } from '../store/index.js';
import { NAME_MAX, type Attr, type Overlay } from './overlay.js';

type Cb = (code: number, ...values: unknown[]) => void;
type Handlers = Record<string, (...args: any[]) => void>;

export interface FuseMountOptions {
  /** Shown as the mount's source in /proc/mounts (no spaces or commas). */
  fsname?: string;
  /**
   * Kernel attribute cache, seconds (default 0). libfuse 2's high-level API gives each name of a
   * hard-linked file its own kernel inode, so a change made through one name (size, nlink, mode)
   * would stay invisible through the other names for this long; 0 keeps them exact.
   */
  attrTimeout?: number;
  /** Kernel name cache, seconds (default 1); every name change goes through the kernel. */
  entryTimeout?: number;
  debug?: boolean;
  /** Other users may use the mount (permissions are checked against each inode's mode). */
  allowOther?: boolean;
  /** Receives handler failures that are not plain errno answers. */
  log?: (message: string) => void;
}

const HIDDEN = /^\.fuse_hidden[0-9a-f]{16}$/;

// fuse_thread_locals_t of fuse-native 2.2.6 on 64-bit Linux (the version is pinned): the opcode
// at 8, the utimens times (milliseconds, size_t) at 104 and 112.
const LOCALS_OP = 8;
const LOCALS_ATIME = 104;
const LOCALS_MTIME = 112;
const OP_UTIMENS = 12;

function u64At(b: Buffer, off: number): number {
  return b.readUInt32LE(off) + b.readUInt32LE(off + 4) * 4294967296;
}

function ms(ns: bigint): number {
  return Number(ns / 1_000_000n);
}

function statObject(a: Attr) {
  return {
    mode: a.mode,
    uid: a.uid,
    gid: a.gid,
    size: a.size,
    dev: 0,
    nlink: a.nlink,
    ino: a.ino,
    rdev: a.rdev,
    blksize: 4096,
    blocks: a.blocks,
    atime: ms(a.atimeNs),
    mtime: ms(a.mtimeNs),
    ctime: ms(a.ctimeNs),
  };
}

/** fuse-native's stat layout: 18 uint32, 64-bit values as low/high pairs, times in ms. */
function statArray(a: Attr): Uint32Array {
  const s = statObject(a);
  const ints = new Uint32Array(18);
  const put64 = (i: number, v: number) => {
    ints[i] = v % 4294967296;
    ints[i + 1] = Math.floor(v / 4294967296);
  };
  ints[0] = s.mode;
  ints[1] = s.uid;
  ints[2] = s.gid;
  put64(3, s.size);
  ints[5] = 0;
  ints[6] = s.nlink;
  ints[7] = s.ino;
  ints[8] = s.rdev;
  ints[9] = s.blksize;
  put64(10, s.blocks);
  put64(12, s.atime);
  put64(14, s.mtime);
  put64(16, s.ctime);
  return ints;
}

/** The components of a path; a component over NAME_MAX is ENAMETOOLONG (libfuse asks for it by path, the kernel checks only PATH_MAX). */
function parts(path: string): Buffer[] {
  if (path === '/' || path === '') return [];
  return path
    .slice(1)
    .split('/')
    .map((p) => {
      const b = Buffer.from(p, 'utf8');
      if (b.length > NAME_MAX) throw new FsError('ENAMETOOLONG');
      return b;
    });
}

function splitPath(path: string): { parent: string; name: Buffer; base: string } {
  const i = path.lastIndexOf('/');
  const base = path.slice(i + 1);
  return { parent: i <= 0 ? '/' : path.slice(0, i), name: Buffer.from(base, 'utf8'), base };
}

/** A name fuse-native can carry: valid UTF-8 without loss (its strings are UTF-8). */
function utf8Name(name: Buffer): string | null {
  const s = name.toString('utf8');
  return Buffer.byteLength(s) === name.length && Buffer.from(s, 'utf8').equals(name) ? s : null;
}

class LayerFuse extends Fuse {
  constructor(
    mnt: string,
    ops: Handlers,
    private readonly mountOptions: string[],
    private readonly mount_: FuseMount,
    debug: boolean,
  ) {
    super(mnt, ops, { timeout: false, force: false, mkdir: false, debug });
  }

  override _fuseOptions(): string {
    return '-o' + this.mountOptions.join(',');
  }

  override _op_fgetattr(signal: Cb, path: string, fd: number): void {
    this.mount_.fgetattr(path, fd, (code, attr) => (code < 0 ? signal(code) : signal(0, statArray(attr!))));
  }

  /**
   * fuse-native 2.2.6 passes the access time in both time arguments of utimens. The request
   * record of the calling FUSE thread (fuse_thread_locals_t, a Buffer it allocated through
   * `_malloc`) holds both: the modification time is read from there, from the one record whose
   * opcode is utimens and whose access time matches (several in flight with different
   * modification times: the access time is used, as before).
   */
  override _op_utimens(signal: Cb, path: string, atimeLow: number, atimeHigh: number): void {
    const atime = atimeHigh * 4294967296 + atimeLow;
    let mtime: number | undefined;
    for (const l of this._threads) {
      if (l.length < LOCALS_MTIME + 8 || l.readUInt32LE(LOCALS_OP) !== OP_UTIMENS || u64At(l, LOCALS_ATIME) !== atime) continue;
      const m = u64At(l, LOCALS_MTIME);
      if (mtime !== undefined && mtime !== m) {
        mtime = atime;
        break;
      }
      mtime = m;
    }
    this.mount_.utimens(path, atime, mtime ?? atime, (code) => signal(code));
  }

  override _op_getxattr(signal: Cb, path: string, name: string, valueBuf: Buffer, _position: number): void {
    this.mount_.getxattr(path, name, (code, value) => {
      if (code < 0) return signal(code, valueBuf.buffer);
      const v = value!;
      if (valueBuf.length === 0) return signal(v.length, valueBuf.buffer);
      if (v.length > valueBuf.length) return signal(-E.ERANGE, valueBuf.buffer);
      v.copy(valueBuf);
      return signal(v.length, valueBuf.buffer);
    });
  }

  override _op_listxattr(signal: Cb, path: string, listBuf: Buffer): void {
    this.mount_.listxattr(path, (code, names) => {
      if (code < 0) return signal(code, listBuf.buffer);
      let total = 0;
      for (const n of names!) total += n.length + 1;
      if (listBuf.length === 0) return signal(total, listBuf.buffer);
      if (total > listBuf.length) return signal(-E.ERANGE, listBuf.buffer);
      let p = 0;
      for (const n of names!) {
        n.copy(listBuf, p);
        p += n.length;
        listBuf[p++] = 0;
      }
      return signal(p, listBuf.buffer);
    });
  }
}

/** One mounted overlay. */
export class FuseMount {
  private readonly fuse: LayerFuse;
  /** libfuse's hidden names of unlinked open files → serial. */
  private readonly hidden = new Map<string, number>();
  private mounted = false;
  private readonly log: (message: string) => void;

  constructor(
    readonly mountpoint: string,
    readonly overlay: Overlay,
    opts: FuseMountOptions = {},
  ) {
    this.log = opts.log ?? (() => {});
    const options = [
      'use_ino',
      'big_writes',
      // A state is data: setuid bits and device nodes in it grant nothing.
      'nosuid',
      'nodev',
      'default_permissions',
      'auto_cache',
      `attr_timeout=${opts.attrTimeout ?? 0}`,
      `entry_timeout=${opts.entryTimeout ?? 1}`,
      'negative_timeout=0',
      'subtype=layerfs',
      ...(opts.allowOther ? ['allow_other'] : []),
      `fsname=${(opts.fsname ?? 'layerfs').replace(/[^A-Za-z0-9_.:@+-]/g, '_')}`,
    ];
    this.fuse = new LayerFuse(mountpoint, this.handlers(), options, this, opts.debug ?? false);
  }

  mount(): Promise<void> {
    return new Promise((resolve, reject) =>
      this.fuse.mount((err) => {
        if (err) return reject(err);
        this.mounted = true;
        resolve();
      }),
    );
  }

  /** Lazy unmount (fusermount -uz): processes still inside keep their open files until they close them. */
  unmount(): Promise<void> {
    if (!this.mounted) return Promise.resolve();
    return new Promise((resolve, reject) =>
      this.fuse.unmount((err) => {
        if (err) return reject(err);
        this.mounted = false;
        resolve();
      }),
    );
  }

  // -------------------------------------------------------------------------------------------

  private serial(path: string): number {
    const h = this.hidden.get(path);
    if (h !== undefined) return h;
    return this.overlay.resolve(parts(path));
  }

  private guard(mutating: boolean, cb: (code: number) => void, fn: () => void): void {
    this.overlay.run(mutating, () => {
      try {
        fn();
      } catch (e) {
        if (!(e instanceof FsError)) this.log(`handler failed: ${(e as Error)?.stack ?? String(e)}`);
        cb(negErrno(e));
      }
    });
  }

  fgetattr(path: string, fd: number, cb: (code: number, attr?: Attr) => void): void {
    this.guard(false, cb, () => cb(0, fd ? this.overlay.fgetattr(fd) : this.overlay.getattr(this.serial(path))));
  }

  getxattr(path: string, name: string, cb: (code: number, value?: Buffer) => void): void {
    this.guard(false, cb, () => cb(0, this.overlay.getxattr(this.serial(path), Buffer.from(name, 'utf8'))));
  }

  utimens(path: string, atimeMs: number, mtimeMs: number, cb: (code: number) => void): void {
    this.guard(true, cb, () => {
      this.overlay.utimens(this.serial(path), BigInt(Math.round(atimeMs)) * 1_000_000n, BigInt(Math.round(mtimeMs)) * 1_000_000n);
      cb(0);
    });
  }

  listxattr(path: string, cb: (code: number, names?: Buffer[]) => void): void {
    this.guard(false, cb, () => cb(0, this.overlay.listxattr(this.serial(path))));
  }

  /** libfuse 2's operations, by area; fuse-native registers an operation only when a handler exists. */
  private handlers(): Handlers {
    return { ...this.readOps(), ...this.fileOps(), ...this.namespaceOps(), ...this.attributeOps() };
  }

  private parent(path: string): { dir: number; name: Buffer } {
    const { parent: p, name } = splitPath(path);
    return { dir: this.serial(p), name };
  }

  /** Runs a mutating operation that answers nothing but success. */
  private change(cb: Cb, fn: () => void): void {
    this.guard(true, cb, () => {
      fn();
      cb(0);
    });
  }

  private readOps(): Handlers {
    const ov = this.overlay;
    const g = this.guard.bind(this);
    return {
      init: (cb: Cb) => cb(0),
      statfs: (_path: string, cb: Cb) => g(false, cb, () => cb(0, ov.statfs())),
      access: (path: string, mode: number, cb: Cb) =>
        g(false, cb, () => {
          ov.access(this.serial(path), mode);
          cb(0);
        }),
      getattr: (path: string, cb: Cb) => g(false, cb, () => cb(0, statObject(ov.getattr(this.serial(path))))),
      readdir: (path: string, cb: Cb) => g(false, cb, () => this.readdir(path, cb)),
      readlink: (path: string, cb: Cb) => g(false, cb, () => cb(0, ov.readlink(this.serial(path)).toString('utf8'))),
      opendir: (_path: string, _flags: number, cb: Cb) => cb(0, 0),
      releasedir: (_path: string, _fd: number, cb: Cb) => cb(0),
      // fgetattr, getxattr and listxattr are served by LayerFuse's overrides (file handles,
      // size queries, ERANGE); fuse-native registers an operation only when a handler exists.
      fgetattr: () => {},
      getxattr: () => {},
      listxattr: () => {},
    };
  }

  /** "." and ".." plus the names fuse-native can carry (valid UTF-8), with their attributes. */
  private readdir(path: string, cb: Cb): void {
    const ov = this.overlay;
    const s = this.serial(path);
    const names: string[] = ['.', '..'];
    const here = ov.getattr(s);
    const stats = [statObject(here), statObject(here)];
    for (const e of ov.readdir(s)) {
      const n = utf8Name(e.name);
      if (n === null) continue;
      names.push(n);
      stats.push(statObject(e.attr));
    }
    cb(0, names, stats);
  }

  private fileOps(): Handlers {
    const ov = this.overlay;
    const g = this.guard.bind(this);
    return {
      open: (path: string, flags: number, cb: Cb) => g((flags & fsc.O_TRUNC) !== 0, cb, () => cb(0, ov.open(this.serial(path), flags))),
      create: (path: string, mode: number, cb: Cb) =>
        g(true, cb, () => {
          const { dir, name } = this.parent(path);
          cb(0, ov.create(dir, name, mode, fsc.O_RDWR, true).fh);
        }),
      read: (_path: string, fd: number, buf: Buffer, len: number, pos: number, cb: Cb) => g(false, cb, () => cb(ov.read(fd, buf, len, pos))),
      write: (_path: string, fd: number, buf: Buffer, len: number, pos: number, cb: Cb) => g(true, cb, () => cb(ov.write(fd, buf.subarray(0, len), pos))),
      flush: (_path: string, _fd: number, cb: Cb) => cb(0),
      fsync: (_path: string, _datasync: number, _fd: number, cb: Cb) => cb(0),
      fsyncdir: (_path: string, _datasync: number, _fd: number, cb: Cb) => cb(0),
      release: (_path: string, fd: number, cb: Cb) => this.change(cb, () => ov.release(fd)),
      truncate: (path: string, size: number, cb: Cb) => this.change(cb, () => ov.truncate(this.serial(path), size)),
      ftruncate: (path: string, fd: number, size: number, cb: Cb) =>
        this.change(cb, () => {
          if (fd) ov.ftruncate(fd, size);
          else ov.truncate(this.serial(path), size);
        }),
    };
  }

  private namespaceOps(): Handlers {
    const ov = this.overlay;
    const at = (path: string, fn: (dir: number, name: Buffer) => void) => (cb: Cb) =>
      this.change(cb, () => {
        const { dir, name } = this.parent(path);
        fn(dir, name);
      });
    return {
      mknod: (path: string, mode: number, dev: number, cb: Cb) => at(path, (dir, name) => ov.mknod(dir, name, mode, dev))(cb),
      mkdir: (path: string, mode: number, cb: Cb) => at(path, (dir, name) => ov.mkdir(dir, name, mode))(cb),
      rmdir: (path: string, cb: Cb) => at(path, (dir, name) => ov.rmdir(dir, name))(cb),
      unlink: (path: string, cb: Cb) =>
        this.change(cb, () => {
          if (this.hidden.delete(path)) return;
          const { dir, name } = this.parent(path);
          ov.unlink(dir, name);
        }),
      rename: (src: string, dest: string, cb: Cb) => this.change(cb, () => this.rename(src, dest)),
      link: (src: string, dest: string, cb: Cb) => at(dest, (dir, name) => ov.link(this.serial(src), dir, name))(cb),
      symlink: (target: string, dest: string, cb: Cb) => at(dest, (dir, name) => ov.symlink(dir, name, Buffer.from(target, 'utf8')))(cb),
    };
  }

  /** A rename, or libfuse's hiding of an unlinked open file (served from the side table). */
  private rename(src: string, dest: string): void {
    const ov = this.overlay;
    const s = this.parent(src);
    const d = splitPath(dest);
    if (HIDDEN.test(d.base)) {
      const serial = ov.lookup(s.dir, s.name);
      if (ov.kindOf(serial) !== InodeKind.Dir) {
        ov.unlink(s.dir, s.name);
        this.hidden.set(dest, serial);
        return;
      }
    }
    ov.rename(s.dir, s.name, this.serial(d.parent), d.name);
  }

  private attributeOps(): Handlers {
    const ov = this.overlay;
    return {
      chmod: (path: string, mode: number, cb: Cb) => this.change(cb, () => ov.chmod(this.serial(path), mode)),
      chown: (path: string, uid: number, gid: number, cb: Cb) => this.change(cb, () => ov.chown(this.serial(path), uid, gid)),
      // Served by LayerFuse's override (both times from the request record).
      utimens: () => {},
      setxattr: (path: string, name: string, value: Buffer, _position: number, flags: number, cb: Cb) =>
        this.change(cb, () => ov.setxattr(this.serial(path), Buffer.from(name, 'utf8'), value, flags)),
      removexattr: (path: string, name: string, cb: Cb) => this.change(cb, () => ov.removexattr(this.serial(path), Buffer.from(name, 'utf8'))),
    };
  }
}
