/**
 * FUSE passthrough (kernel feature `passthrough`, Linux 6.9+, a root daemon): a read-only open
 * of a file whose content sits whole in a spool file (written in the Workspace, spilled to disk,
 * not truncated since) is answered FOPEN_PASSTHROUGH with that spool file as its backing file,
 * so the kernel reads it itself, through the spool's own page cache, without a READ to this
 * thread. Stored content never qualifies: chunks are compressed and verified, not a plain file.
 *
 * The kernel's rules, and how this keeps commits and status exact:
 * - While an inode has passthrough opens, the kernel fails (EIO) every open of it that is not
 *   passthrough, and a passthrough open fails while the inode has cached (ordinary) opens. So
 *   passthrough is given only when the overlay has no other open handle of the inode, and while
 *   passthrough opens live every read-only open of it gets the same backing id.
 * - Writes must reach the daemon (a commit is a cut between two requests, and status compares
 *   the overlay). A writable or truncating open, and a truncate by path, of an inode with
 *   passthrough opens is refused with ETXTBSY ("file busy") instead of bypassing it; once the
 *   readers close, writers open as before.
 * - The backing file is the spool the serving thread writes: bytes never diverge. A commit drops
 *   the spool (unlinks it); the kernel keeps its reference, whose bytes are the committed ones.
 * The backing id is dropped (FUSE_DEV_IOC_BACKING_CLOSE) when the inode's last passthrough
 * handle is released; the kernel keeps the file while opens that use it live.
 */
import { constants as osc } from 'node:fs';
import { fuseBackingClose, fuseBackingOpen } from '../native/mount.js';
import { FsError } from './errno.js';

const O_ACCMODE = 3;

interface Backing {
  id: number;
  opens: number;
}

/** What the passthrough decision needs of the overlay. */
export interface PassthroughSource {
  wholeSpool(fh: number): string | null;
  openCount(serial: number): number;
}

export class Passthrough {
  private fd = -1;
  private on = false;
  private readonly backings = new Map<number, Backing>();
  private readonly handles = new Map<number, number>();
  /** Why passthrough stopped on this connection (a failed BACKING_OPEN), for the log. */
  stopped: string | null = null;
  /** Opens answered with passthrough on this connection. */
  granted = 0;

  /** The /dev/fuse descriptor of the mount this thread serves now. */
  attach(fd: number): void {
    this.detach();
    this.fd = fd;
  }

  /** INIT negotiated FUSE_PASSTHROUGH (or not). */
  negotiated(on: boolean): void {
    this.on = on && this.fd >= 0;
    this.stopped = null;
  }

  /** The mount ended: its backing ids end with its connection. */
  detach(): void {
    this.fd = -1;
    this.on = false;
    this.backings.clear();
    this.handles.clear();
    this.granted = 0;
  }

  /** Before an open or truncate of `serial`: a writer of an inode with passthrough opens is refused. */
  admit(serial: number, flags: number, truncate = false): void {
    if (!this.backings.has(serial)) return;
    if (truncate || (flags & O_ACCMODE) !== osc.O_RDONLY || flags & osc.O_TRUNC) {
      throw new FsError('ETXTBSY', 'the file is open for passthrough reads; it can be written once they close');
    }
  }

  /** The backing id for the open `fh` of `serial` just made, or 0 for an ordinary open. */
  forOpen(src: PassthroughSource, serial: number, fh: number, flags: number): number {
    if (!this.on || (flags & O_ACCMODE) !== osc.O_RDONLY || flags & osc.O_TRUNC) return 0;
    let b = this.backings.get(serial);
    if (!b) {
      // Any other handle may be a cached open in the kernel, which would fail this one.
      if (src.openCount(serial) !== 1) return 0;
      const path = src.wholeSpool(fh);
      if (path === null) return 0;
      const id = fuseBackingOpen(this.fd, path);
      if (id <= 0) {
        // EPERM (no CAP_SYS_ADMIN), ENOTTY (no passthrough), …: serve every open ourselves.
        this.on = false;
        this.stopped = `FUSE passthrough is off for this mount: backing open failed (errno ${-id})`;
        return 0;
      }
      b = { id, opens: 0 };
      this.backings.set(serial, b);
    }
    b.opens++;
    this.handles.set(fh, serial);
    this.granted++;
    return b.id;
  }

  /** A handle was released (passthrough or not). */
  released(fh: number): void {
    const serial = this.handles.get(fh);
    if (serial === undefined) return;
    this.handles.delete(fh);
    const b = this.backings.get(serial)!;
    if (--b.opens > 0) return;
    this.backings.delete(serial);
    fuseBackingClose(this.fd, b.id);
  }
}

/** This serving thread's passthrough state (one mount at a time per thread). */
export const passthrough = new Passthrough();
