/**
 * Where a live overlay keeps the bytes written to a file: in memory while small (most files a tool
 * writes are), in a sparse file under the spool directory once large or once the overlay's memory
 * budget is used up. Each byte stays at its own offset (lib/fuse/content.ts explains why).
 */
import { spawn } from 'node:child_process';
import { closeSync, fstatSync, ftruncateSync, openSync, readdirSync, renameSync, unlinkSync, writeSync, constants as fsc } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { constants as osc } from 'node:os';
import { join } from 'node:path';
import { threadId } from 'node:worker_threads';
import { LRUCache } from 'lru-cache';
import { LayerFsError } from '../errors.js';
import { writeBehind, writeBehindChanged, writeBehindDrain, writeBehindRead } from '../native/fd.js';
import { FsError, type ErrnoName } from './errno.js';

/** Copy-on-write granularity over stored content. */
export const PAGE = 4096;
/** Bytes written, each at its own offset: in memory or in a file. Reads past what was written give zeros. */
export interface SpoolLike {
  read(dst: Buffer, off: number, len: number, pos: number): void;
  write(src: Buffer, pos: number): void;
  truncate(size: number): void;
  close(): void;
}

/** A file's spool moves to disk once it holds this much in memory. */
export const SPILL_FILE = 1 << 20;

/**
 * Memory all in-memory spools of one overlay may hold by default: 4 MiB, or
 * $LAYERFS_SPOOL_MEMORY_MIB. Enough for what one tool call writes (its files then cost no spool
 * file); a larger change goes to spool files, made ahead (spool-reserve.ts). At 16 MiB a
 * whole-tree change left the daemon 8–16 MiB larger and was no faster (docs/DECISIONS.md, "Four
 * MiB of in-memory spools per mount").
 */
export function spoolMemoryBudget(): number {
  const mib = Number(process.env.LAYERFS_SPOOL_MEMORY_MIB);
  return (Number.isFinite(mib) && mib >= 0 ? mib : 4) * 1024 * 1024;
}

/** Memory all in-memory spools of one overlay may hold together. */
export class MemoryBudget {
  used = 0;

  constructor(readonly limit = 256 * 1024 * 1024) {}
}

/** A sparse in-memory spool: 4 KiB pages by index. */
export class MemSpool implements SpoolLike {
  readonly pages = new Map<number, Buffer>();

  constructor(private readonly budget: MemoryBudget) {}

  get bytes(): number {
    return this.pages.size * PAGE;
  }

  read(dst: Buffer, off: number, len: number, pos: number): void {
    let p = pos;
    const end = pos + len;
    while (p < end) {
      const page = Math.floor(p / PAGE);
      const inPage = p - page * PAGE;
      const n = Math.min(PAGE - inPage, end - p);
      const data = this.pages.get(page);
      if (data) data.copy(dst, off + (p - pos), inPage, inPage + n);
      else dst.fill(0, off + (p - pos), off + (p - pos) + n);
      p += n;
    }
  }

  write(src: Buffer, pos: number): void {
    let p = pos;
    const end = pos + src.length;
    while (p < end) {
      const page = Math.floor(p / PAGE);
      const inPage = p - page * PAGE;
      const n = Math.min(PAGE - inPage, end - p);
      let data = this.pages.get(page);
      if (!data) {
        data = Buffer.alloc(PAGE);
        this.pages.set(page, data);
        this.budget.used += PAGE;
      }
      src.copy(data, inPage, p - pos, p - pos + n);
      p += n;
    }
  }

  truncate(size: number): void {
    const keep = Math.ceil(size / PAGE);
    for (const page of [...this.pages.keys()]) {
      if (page >= keep) {
        this.pages.delete(page);
        this.budget.used -= PAGE;
      }
    }
    const tail = this.pages.get(Math.floor(size / PAGE));
    if (tail) tail.fill(0, size % PAGE);
  }

  close(): void {
    this.budget.used -= this.pages.size * PAGE;
    this.pages.clear();
  }
}

/**
 * The open descriptors of disk spools, least recently used first. A Workspace may hold far more
 * dirty files than a process may open (rsync of a release over another dirties ~80,000), so a
 * spool keeps its bytes in its file and opens it only while in use: at most OPEN_SPOOLS stay open
 * per serving thread, and the least recently used is closed to make room.
 */
const OPEN_SPOOLS = 128;
const openSpools = new LRUCache<Spool, number>({
  max: OPEN_SPOOLS,
  dispose: (fd, spool) => {
    // Queued writes end before the descriptor does (a later one could reuse its number).
    spool.noteDrain(writeBehindDrain(fd, true));
    closeSync(fd);
  },
});

function spoolFd(spool: Spool, flags: number): number {
  const fd = openSpools.get(spool);
  if (fd !== undefined) return fd;
  const opened = openSync(spool.path, flags, 0o600);
  openSpools.set(spool, opened);
  return opened;
}

/** Write-behind is on unless $LAYERFS_WRITE_BEHIND is 0 (then each write is written in place, for A/B runs). */
const WRITE_BEHIND = process.env.LAYERFS_WRITE_BEHIND !== '0';

const errnoNames = new Map<number, ErrnoName>(Object.entries(osc.errno).map(([k, v]) => [v, k as ErrnoName]));

/**
 * A private sparse file holding written bytes at their own offsets. Never inside a mount.
 * Writes are written behind (native/napi_write_behind.cc): `write` queues a copy and returns,
 * a background thread writes it into the file. Every read, truncate, close and `settle` first
 * waits for this file's queued writes. A failed background write (ENOSPC, EIO) is sticky: every
 * later write, read and settle throws it, and a commit refuses the file (`check`), until the
 * file is truncated to 0 (its content is then known again) or dropped.
 */
export class Spool implements SpoolLike {
  private closed = false;
  /** The first background write failure, sticky. */
  private failure: ErrnoName | null = null;

  /**
   * The file's path is `prefix` (shared by every spool of an overlay) and a number: with tens of
   * thousands of spooled files a path string each would cost MiBs.
   */
  constructor(
    private readonly prefix: string,
    private readonly n: number,
    made: SpoolMade = SpoolMade.No,
  ) {
    // Created now, exclusively and without following links; reopened later without O_CREAT. A
    // file made ahead (spool-reserve.ts) is only opened: creating one costs 25–100 µs here.
    if (made === SpoolMade.Yes && this.opened(fsc.O_RDWR | fsc.O_NOFOLLOW, 'ENOENT')) return;
    // The reserve's maker is the only other creator in this private directory: when it got there
    // first (EEXIST), its file is this spool's.
    if (!this.opened(fsc.O_RDWR | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, made === SpoolMade.Maybe ? 'EEXIST' : null)) spoolFd(this, fsc.O_RDWR | fsc.O_NOFOLLOW);
  }

  /** Opens the file with `flags`: true once open, false on the error `tolerated` names (any other throws). */
  private opened(flags: number, tolerated: string | null): boolean {
    try {
      spoolFd(this, flags);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== tolerated) throw e;
      return false;
    }
  }

  get path(): string {
    return spoolPath(this.prefix, this.n);
  }

  private get fd(): number {
    return spoolFd(this, fsc.O_RDWR | fsc.O_NOFOLLOW);
  }

  /** Records what a drain or queueing of this file's writes returned (-errno or 0). */
  noteDrain(r: number): void {
    if (r < 0 && this.failure === null) this.failure = errnoNames.get(-r) ?? 'EIO';
  }

  /** Waits for this file's queued writes; throws the sticky failure as an FsError. */
  settle(): void {
    const fd = openSpools.peek(this);
    if (fd !== undefined) this.noteDrain(writeBehindDrain(fd));
    if (this.failure !== null) throw new FsError(this.failure, `a write into the spool file ${this.path} failed (${this.failure})`);
  }

  /** Throws a typed error when a write of this file was lost (for the commit: nothing is stored). */
  check(path: () => string): void {
    try {
      this.settle();
    } catch (e) {
      const file = path();
      const code = this.failure === 'ENOSPC' ? 'ERR_NO_SPACE' : 'ERR_NATIVE_IO';
      throw new LayerFsError(code, `${file}: a write into the file was lost (${(e as FsError).code}); nothing was committed`, {
        path: file,
        errno: this.failure ?? 'EIO',
        hint: 'free space under the Store directory, then write the file again (or truncate or remove it) and commit',
      });
    }
  }

  /** Fills dst[off, off + len) from the file at pos; bytes past its end read as zeros. */
  read(dst: Buffer, off: number, len: number, pos: number): void {
    this.settle();
    const n = len === 0 ? 0 : writeBehindRead(this.fd, dst.subarray(off, off + len), pos);
    if (n < 0) throw new FsError(errnoNames.get(-n) ?? 'EIO', `reading the spool file ${this.path} failed`);
    if (n < len) dst.fill(0, off + n, off + len);
  }

  write(src: Buffer, pos: number): void {
    if (!WRITE_BEHIND) {
      let done = 0;
      while (done < src.length) done += writeSync(this.fd, src, done, src.length - done, pos + done);
      return;
    }
    if (this.failure === null) this.noteDrain(writeBehind(this.fd, src, pos));
    if (this.failure !== null) this.settle();
  }

  truncate(size: number): void {
    const fd = this.fd;
    this.noteDrain(writeBehindDrain(fd));
    writeBehindChanged();
    ftruncateSync(fd, size);
    if (size === 0) this.failure = null;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (trash) {
      // Only a file still open is measured (a stat each of thousands of closed ones would cost
      // more than their removal): a large file just written and deleted always is.
      const fd = openSpools.peek(this);
      if (fd !== undefined) {
        try {
          trashBytes += fstatSync(fd).size;
        } catch {
          /* measured as 0 */
        }
      }
      openSpools.delete(this);
      toTrash(this.prefix, this.n);
      return;
    }
    openSpools.delete(this);
    try {
      unlinkSync(this.path);
    } catch {
      /* already gone */
    }
  }
}

/**
 * Spool files closed but not yet removed, when this thread defers their removal (a serving
 * thread: unlink(2) cost ~350 µs a file on this disk, 7 of the 19 s a 20,000-file commit took
 * when it removed them itself, while the mount waited). Their names go to the daemon's thread,
 * which removes them in the background (removeSpoolFiles).
 */
let trash: Map<string, number[]> | null = null;
let trashCount = 0;
/** Bytes of the trashed files that were open when closed (the others count 0). */
let trashBytes = 0;

/**
 * Closed spool files, as their path prefix and numbers: a whole-tree commit closes ~84,000 at
 * once, and their paths as strings (and the message that carried them) added 9–13 MiB to the
 * daemon right after the commit, at its peak.
 */
export type SpoolTrash = { prefix: string; numbers: Float64Array }[];

/** Closed spool files are handed over for removal once this many wait… */
const TRASH_FILES = 256;
/** …or once those still open when closed held this many bytes. */
const TRASH_BYTES = 1 << 20;

/** From now on this thread leaves closed spool files for takeSpoolTrash(). */
export function deferSpoolRemoval(): void {
  trash ??= new Map();
}

function toTrash(prefix: string, n: number): void {
  let numbers = trash!.get(prefix);
  if (!numbers) trash!.set(prefix, (numbers = []));
  numbers.push(n);
  trashCount++;
}

/** How many closed spool files wait for removal. */
export function spoolTrashSize(): number {
  return trashCount;
}

/**
 * Whether the closed spool files should be removed now: many of them, or a large one (a file
 * deleted in the Workspace keeps its disk space, and its page cache, until its spool is removed).
 */
export function spoolTrashDue(): boolean {
  return trash !== null && trashCount > 0 && (trashCount >= TRASH_FILES || trashBytes >= TRASH_BYTES);
}

/** The closed spool files waiting for removal (the list starts empty again). */
export function takeSpoolTrash(): SpoolTrash {
  if (!trash || trashCount === 0) return [];
  const out = [...trash].map(([prefix, numbers]) => ({ prefix, numbers: Float64Array.from(numbers) }));
  trash.clear();
  trashCount = 0;
  trashBytes = 0;
  return out;
}

/** Removes spool files one at a time off this thread's loop (a file already gone is fine). */
export async function removeSpoolFiles(files: SpoolTrash): Promise<void> {
  for (const { prefix, numbers } of files) for (const n of numbers) await unlink(spoolPath(prefix, n)).catch(() => {});
}

function spoolPath(prefix: string, n: number): string {
  return prefix + n.toString(36);
}

/** Directories with at most this many entries are removed at once, in this process. */
const REMOVE_HERE_MAX = 64;
/** Removals handed to `rm -rf` that have not finished: the daemon waits for them before it exits. */
const pendingRemovals = new Set<Promise<void>>();

/**
 * Removes a spool directory. A small one (the usual case) is removed here and now. A large one
 * is renamed aside at once (a new mount of the Workspace gets a fresh one) and removed by a
 * detached `rm -rf`, so ending a Workspace with 70,000 dirty files does not wait for 70,000
 * unlinks on the serving path; `spoolRemovalsDone` lets the daemon finish them before it exits,
 * so nothing of the daemon's is still being deleted once it is gone. A directory that cannot be
 * renamed is removed here. Resolves when the removal is over.
 */
export function removeSpoolDir(dir: string, rmSyncFallback: (dir: string) => void): Promise<void> {
  let entries: number;
  try {
    entries = readdirSync(dir).length;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') rmSyncFallback(dir);
    return Promise.resolve();
  }
  if (entries <= REMOVE_HERE_MAX) {
    rmSyncFallback(dir);
    return Promise.resolve();
  }
  const aside = `${dir}.removing-${process.pid}-${(spoolCounter++).toString(36)}`;
  try {
    renameSync(dir, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') rmSyncFallback(dir);
    return Promise.resolve();
  }
  const done = new Promise<void>((resolve) => {
    try {
      const child = spawn('rm', ['-rf', '--', aside], { detached: true, stdio: 'ignore', cwd: '/' });
      child.on('error', () => {
        rmSyncFallback(aside);
        resolve();
      });
      child.on('exit', () => resolve());
      child.unref();
    } catch {
      rmSyncFallback(aside);
      resolve();
    }
  });
  pendingRemovals.add(done);
  void done.then(() => pendingRemovals.delete(done));
  return done;
}

/** Waits for every spool removal still running, at most `capMs` (a larger one goes on after). */
export async function spoolRemovalsDone(capMs: number): Promise<void> {
  const all = Promise.all([...pendingRemovals]);
  let timer: NodeJS.Timeout | undefined;
  const cap = new Promise<void>((r) => (timer = setTimeout(r, capMs)));
  await Promise.race([all, cap]);
  clearTimeout(timer);
}

/** How many spool descriptors this thread holds open (bounded by OPEN_SPOOLS). */
export function openSpoolCount(): number {
  return openSpools.size;
}

export interface SpoolFactory {
  (): Spool;
}

/** Whether a spool's file exists before the spool does: made ahead, perhaps being made, or not. */
export const enum SpoolMade {
  No,
  Yes,
  Maybe,
}

/**
 * Spool files made ahead of their use by another thread, so that the serving thread only opens
 * them (spool-reserve.ts).
 */
export interface SpoolReserve {
  /** Spool numbers below this have their empty file made. */
  made(): number;
  /** Asks for the files of spool numbers [from, to) under `prefix` to be made, in order. */
  ask(prefix: string, from: number, to: number): void;
}

/** A factory asks for more files when fewer than this many are asked for and not yet used. */
const RESERVE_LOW = 128;
/** Files asked for at a time. */
const RESERVE_BATCH = 256;

let spoolCounter = 0;
let factories = 0;

export function spoolFactory(dir: string, reserve?: SpoolReserve): SpoolFactory {
  // The thread is named as well: serving threads of one process each count from 0.
  const prefix = join(dir, `${process.pid}-${threadId}-${Date.now().toString(36)}-${(factories++).toString(36)}-`);
  let next = 0;
  let asked = 0;
  return () => {
    const n = next++;
    if (!reserve) return new Spool(prefix, n);
    if (asked - n < RESERVE_LOW) {
      reserve.ask(prefix, asked, asked + RESERVE_BATCH);
      asked += RESERVE_BATCH;
    }
    return new Spool(prefix, n, n < reserve.made() ? SpoolMade.Yes : SpoolMade.Maybe);
  };
}
