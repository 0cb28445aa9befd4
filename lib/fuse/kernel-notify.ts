/**
 * Invalidations the kernel gets after the overlay of a mount moved onto a state it did not make
 * itself (a reconciling commit merged the Branch's other changes in, or an unchanged Workspace
 * moved onto a new head). The kernel caches entries and attributes for 60 s and keeps the page
 * cache of opened files (every change normally goes through it): without these it would show the
 * pre-merge size and bytes of a file the other side changed, and names as they were.
 *
 * For every path of the diff between the two states (page trees, so its cost follows the change):
 * FUSE_NOTIFY_INVAL_INODE for its inode (attributes and every cached page) and
 * FUSE_NOTIFY_INVAL_ENTRY for its name when it was added, deleted or renamed (and its old name),
 * which also expires the parent directory's attributes.
 *
 * Who writes them matters: the kernel handles a notification inside the write(2) and takes the
 * parent directory's lock (entries) and the lock of each cached page (inodes). A process in the
 * middle of a lookup or create holds that directory lock while it waits for the serving thread's
 * answer, and the pages of a READ in flight stay locked until its answer: so the serving thread
 * must never write a notification itself. A reader thread writes them (kernel-readers.ts), with no
 * READ queued behind the batch, so every lock it may wait for is released by a thread that keeps
 * serving.
 */
import { diffStates } from '../history/index.js';
import type { Store } from '../store/index.js';
import { OUT_HDR, u64 } from './kernel-wire.js';

const FUSE_NOTIFY_INVAL_INODE = 2;
const FUSE_NOTIFY_INVAL_ENTRY = 3;
/** More paths than this changed on the other side: the rest expire with the caches' timeouts. */
const MAX_PATHS = 100_000;

function header(len: number, code: number): Buffer {
  const b = Buffer.alloc(len);
  b.writeUInt32LE(len, 0);
  b.writeInt32LE(code, 4);
  // unique 0: a notification, not a reply
  return b;
}

/** struct fuse_notify_inval_inode_out: every cached page (offset 0, length 0) and the attributes. */
export function invalInode(serial: number): Buffer {
  const b = header(OUT_HDR + 24, FUSE_NOTIFY_INVAL_INODE);
  u64(b, OUT_HDR, serial);
  return b;
}

/** struct fuse_notify_inval_entry_out, then the name and its NUL. */
export function invalEntry(parent: number, name: Buffer): Buffer {
  const b = header(OUT_HDR + 16 + name.length + 1, FUSE_NOTIFY_INVAL_ENTRY);
  u64(b, OUT_HDR, parent);
  b.writeUInt32LE(name.length, OUT_HDR + 8);
  name.copy(b, OUT_HDR + 16);
  return b;
}

const SLASH = 0x2f;

/** The notifications that make the kernel forget what changed from state `from` to state `to`. */
export function invalidations(store: Store, from: Buffer, to: Buffer): Buffer[] {
  const views = [store.view(to), store.view(from)];
  const out: Buffer[] = [];
  const inodes = new Set<number>();
  const entries = new Set<string>();
  const entry = (path: Buffer): void => {
    if (path.length === 0 || entries.has(path.toString('latin1'))) return;
    entries.add(path.toString('latin1'));
    const cut = path.lastIndexOf(SLASH);
    const dir = cut < 0 ? [] : splitPath(path.subarray(0, cut));
    for (const v of views) {
      try {
        out.push(invalEntry(v.resolve(dir, '').serial, path.subarray(cut + 1)));
        return;
      } catch {
        /* not in this state: the other one */
      }
    }
  };
  for (const e of diffStates(store, from, to, { limit: MAX_PATHS }).entries) {
    if (!inodes.has(e.serial)) {
      inodes.add(e.serial);
      out.push(invalInode(e.serial));
    }
    // A modified path keeps its inode: its entry stays right (dropping it would also detach a
    // directory some process has as its working directory).
    if (e.change === 'modified') continue;
    entry(e.pathBytes);
    if (e.oldPathBytes) entry(e.oldPathBytes);
  }
  return out;
}

function splitPath(p: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i <= p.length; i++) {
    if (i === p.length || p[i] === SLASH) {
      if (i > start) parts.push(p.subarray(start, i));
      start = i + 1;
    }
  }
  return parts;
}
