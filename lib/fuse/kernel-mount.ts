/**
 * The daemon-side controller of one kernel-backend mount: attaches it (attach.ts: mount(2) of a
 * /dev/fuse descriptor as root, fusermount's descriptor hand-over otherwise),
 * starts the serving thread (kernel-worker.ts) that answers requests, talks to it with messages
 * (waking it with a lookup of a throw-away name), and unmounts.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, writeFileSync, constants as fsc } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { LayerFsError, type ErrorCode } from '../errors.js';
import { attachFuse, detachFuse, fusermountPath } from './attach.js';
import { FsError } from './errno.js';
import { flushMount, mountsCacheWrites } from './kernel-flush.js';
import { holdSpares, releaseServingWorker, takeServingWorker, yieldingSpares } from './kernel-spare.js';
import { MAX_WRITE, WAKE_PREFIX } from './kernel-wire.js';
import type { FuseChanges, FuseCommitOutcome, MountStatus } from './protocol.js';
import { removeSpoolFiles, type SpoolTrash } from './spool.js';
import { SpoolMaker, type SpoolRequest } from './spool-reserve.js';
import { activityCells, pendingRecords, QuietWatch } from './quiet-settle.js';
import { wakeLookup } from './waker.js';
import type { CommitNote } from '../history/index.js';

export interface KernelMountOptions {
  /** Kernel name and attribute cache, seconds (default 60: every change goes through the kernel). */
  entryTimeout?: number;
  attrTimeout?: number;
  /** Source shown in /proc/mounts. */
  fsname?: string;
  /** Other users may use the mount (their permissions are checked against each inode's mode). */
  allowOther?: boolean;
  log?: (message: string) => void;
}

/**
 * Whether this process can use the kernel backend: Linux, /dev/fuse opens, and either root
 * (mount(2) from the addon) or a fusermount to mount for an ordinary user (attach.ts).
 */
export function kernelBackendUsable(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    closeSync(openSync('/dev/fuse', fsc.O_RDWR));
  } catch {
    return false;
  }
  return process.getuid?.() === 0 || fusermountPath() !== null;
}

/** mount(8) with `fd` as its fd 3 (mounts are made by attach.ts now; kept for callers of the old path). */
export function runMount(args: string[], fd: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('mount', args, { stdio: ['ignore', 'pipe', 'pipe', fd] });
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', (e) => resolve({ code: -1, out: e.message }));
    child.on('close', (code) => resolve({ code, out: out.trim() }));
  });
}

export function runCmd(cmd: string, args: string[]): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: 'ignore' });
    child.on('error', () => resolve(false));
    child.on('close', (code) => resolve(code === 0));
  });
}

/** What the worker needs to build the Workspace's overlay (hex ids; the worker opens its own Store connection). */
export interface KernelWorkerParams {
  storePath: string;
  spoolDir: string;
  rootId: string;
  branchId: string;
  expectedHead: string | null;
  expectedBase: string;
  workspaceId: string | null;
  memoryBudget?: number;
  protocol: { entryTimeout?: number; attrTimeout?: number };
}

/** The first message to a serving thread: the mount it serves. */
export interface StartWorker {
  type: 'start';
  fd: number;
  params: KernelWorkerParams;
  /** Requests answered, shared with the controller (quiet-settle.ts). */
  activity: Int32Array;
}

type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;
export type ToWorker = { id: number; type: 'commit'; note: CommitNote; strict: boolean; cells?: Int32Array } | { id: number; type: 'state' } | { id: number; type: 'changes' } | { id: number; type: 'writers' } | { id: number; type: 'settle'; seen: number };
export type FromWorker =
  | { type: 'ready' }
  | { type: 'idle' }
  | { type: 'dirty' }
  | { type: 'log'; message: string }
  | { type: 'discard'; files: SpoolTrash }
  | SpoolRequest
  | { type: 'fatal'; message: string }
  | { type: 'ended' }
  | { type: 'result'; id: number; ok: true; value: unknown }
  | { type: 'result'; id: number; ok: false; error: { code: string; message: string; details?: Record<string, unknown> } };

/** A mount of this namespace uses FUSE connection `n` (device 0:n). */
async function connectionMounted(n: number): Promise<boolean> {
  try {
    const text = await readFile('/proc/self/mountinfo', 'utf8');
    return text.split('\n').some((l) => l.split(' ')[2] === `0:${n}`);
  } catch {
    return true; // unknown: do not abort
  }
}

/**
 * The FUSE connection number (device 0:n) of the newest mount at `mountpoint`, from
 * /proc/self/mountinfo: a stat of the mount point would be a request to our own mount, which a
 * kill at the wrong moment turns into a wait that never ends (waker.ts).
 */
async function connectionAt(mountpoint: string): Promise<number | null> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  // Mount points are octal-escaped there (space, tab, newline, backslash).
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
  let found: number | null = null;
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length > 4 && unescape(f[4]!) === mountpoint && f[2]!.startsWith('0:')) found = Number(f[2]!.slice(2));
  }
  return found;
}

/** No progress for this long: the serving thread is stuck, not slow. */
const STALL_MS = 15_000;
/** However busy the machine, a mount that takes longer than this has failed. */
const MOUNT_LIMIT_MS = 300_000;
/** CPU time the daemon must have used over a STALL_MS window to count as making progress. */
const PROGRESS_CPU_US = 50_000;

/**
 * Resolves with a reason once the daemon stops making progress towards the mount: no CPU used
 * by any of its threads over STALL_MS (a serving thread that loads its modules or opens the Store
 * uses CPU all along; one stuck on a lock or a dead descriptor uses none), or MOUNT_LIMIT_MS in
 * all. A fixed wall-time limit failed first mounts on a loaded machine, where loading the serving
 * thread alone took longer than that limit.
 */
function untilStalled(): { done: Promise<string>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const start = performance.now();
  const done = new Promise<string>((resolve) => {
    let cpu = process.cpuUsage();
    const check = (): void => {
      const used = process.cpuUsage(cpu);
      cpu = process.cpuUsage();
      if (used.user + used.system < PROGRESS_CPU_US) return resolve(`no progress in ${STALL_MS / 1000} s`);
      if (performance.now() - start >= MOUNT_LIMIT_MS) return resolve(`not ready after ${MOUNT_LIMIT_MS / 1000} s`);
      timer = setTimeout(check, STALL_MS).unref();
    };
    timer = setTimeout(check, STALL_MS).unref();
  });
  return { done, cancel: () => clearTimeout(timer) };
}

/** The controller of one kernel-backend mount (lives on the daemon's thread). */
export class KernelMount {
  private fd = -1;
  private worker: Worker | null = null;
  private nextId = 1;
  private wakes = 0;
  /** Releases the hold on spare serving threads taken while the prestore thread runs. */
  private spareHold: (() => void) | null = null;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private ended: Promise<void>;
  private markEnded!: () => void;
  private isEnded = false;
  /** The serving thread ended its service cleanly and waits for another mount. */
  private reusable = false;
  private ready!: { resolve: () => void; reject: (e: unknown) => void };
  private connection: number | null = null;
  private readonly log: (message: string) => void;
  private readonly fsname: string;
  /** The kernel caches writes: flushed before each message (kernel-flush.ts). */
  private readonly cachesWrites = mountsCacheWrites();
  /** Makes the serving thread's spool files ahead of use (spool-reserve.ts). */
  private readonly spools = new SpoolMaker();
  private readonly activity = activityCells();
  private quiet: QuietWatch | null = null;

  constructor(
    readonly mountpoint: string,
    private readonly params: KernelWorkerParams,
    private readonly opts: KernelMountOptions = {},
    private readonly onDirty: () => void = () => {},
  ) {
    this.log = opts.log ?? (() => {});
    this.fsname = (opts.fsname ?? 'layerfs').replace(/[^A-Za-z0-9_.:@+-]/g, '_');
    this.ended = new Promise((r) => (this.markEnded = r));
  }

  async mount(): Promise<void> {
    // mount(2) from the addon as root, fusermount's descriptor hand-over otherwise: the same
    // options either way (attach.ts), and the same protocol from here on.
    this.fd = await attachFuse(this.mountpoint, { fsname: this.fsname, allowOther: this.opts.allowOther ?? false });
    // The kernel has queued INIT; the worker answers it first thing.
    const ready = new Promise<void>((resolve, reject) => (this.ready = { resolve, reject }));
    const w = takeServingWorker(this.params.storePath);
    this.worker = w;
    w.postMessage({ type: 'start', fd: this.fd, params: this.params, activity: this.activity } satisfies StartWorker);
    w.on('message', (m: FromWorker) => this.message(m));
    w.on('error', (e) => {
      this.log(`serving thread failed: ${e.stack ?? e.message}`);
      this.ready.reject(e);
      this.finish();
    });
    w.on('exit', () => this.finish());
    const stalled = untilStalled();
    try {
      if ((await Promise.race([ready.then(() => 'ok' as const), stalled.done])) !== 'ok') throw new FsError('ETIMEDOUT', `the mount did not come up: ${await stalled.done}`);
    } catch (e) {
      await detachFuse(this.mountpoint);
      void w.terminate();
      throw e;
    } finally {
      stalled.cancel();
    }
    // Never while the controller waits for an answer (a commit settles after itself).
    this.quiet = new QuietWatch(
      this.activity,
      (seen) => void this.send({ type: 'settle', seen }).catch(() => {}),
      () => this.waiting.size > 0,
      () => this.wake(),
      (on) => this.prestoring(on),
    );
    // In the background: the mount is usable already, and a create should not wait for a read
    // of the mount table through the thread pool (tens of ms on a loaded machine).
    void this.tune();
  }

  /** Finds the mount's FUSE connection (for an abort at unmount) and raises its readahead. */
  private async tune(): Promise<void> {
    try {
      this.connection = await connectionAt(this.mountpoint);
      if (this.connection === null || this.isEnded) return;
      // Larger sequential READs: fewer round trips (the kernel starts a mount at 128 KiB).
      writeFileSync(`/sys/class/bdi/0:${this.connection}/read_ahead_kb`, String(MAX_WRITE >> 10));
    } catch {
      /* no mount table, no sysfs, or not allowed: the default readahead */
    }
  }

  private message(m: FromWorker): void {
    switch (m.type) {
      case 'ready':
        this.ready.resolve();
        return;
      case 'idle':
        return;
      case 'dirty':
        this.onDirty();
        return;
      case 'log':
        this.log(m.message);
        return;
      case 'discard':
        void removeSpoolFiles(m.files);
        return;
      case 'spools':
        this.spools.make(m);
        return;
      case 'fatal':
        this.log(`serving thread stopped: ${m.message}`);
        this.ready.reject(new FsError('EIO', m.message));
        return;
      case 'ended':
        this.reusable = true;
        this.finish();
        return;
      case 'result': {
        const w = this.waiting.get(m.id);
        if (!w) return;
        this.waiting.delete(m.id);
        if (m.ok) w.resolve(m.value);
        else w.reject(new LayerFsError(m.error.code as ErrorCode, m.error.message, m.error.details ?? {}));
      }
    }
  }

  /** The serving thread is gone (unmounted, or it failed): close our end so the kernel aborts anything still waiting. */
  private finish(): void {
    if (this.isEnded) return;
    this.isEnded = true;
    this.quiet?.stop();
    this.prestoring(false);
    for (const w of this.waiting.values()) w.reject(new LayerFsError('ERR_BUSY', 'the mount ended'));
    this.waiting.clear();
    try {
      closeSync(this.fd);
    } catch {
      /* closed */
    }
    this.markEnded();
    // A clean end leaves the thread waiting for another mount: kept for the next one.
    if (this.worker && this.reusable) {
      releaseServingWorker(this.worker, this.params.storePath);
      this.worker = null;
    }
  }

  /** Sends one message to the serving thread and waits for its answer. */
  private async ask<T>(message: DistributiveOmit<ToWorker, 'id'>): Promise<T> {
    // With the writeback cache every request is preceded by a flush: a shared mapping's writes
    // can still be in the kernel after its descriptor closed, so no count of handles open for
    // writing tells when the flush could be skipped.
    if (this.cachesWrites && this.worker && !this.isEnded) await flushMount(this.mountpoint, await this.send<string[]>({ type: 'writers' }));
    return this.send<T>(message);
  }

  /** While the mount's prestore thread runs, the daemon's idle serving threads are ended (kernel-spare.ts holdSpares). */
  private prestoring(on: boolean): void {
    if (on && this.spareHold === null && !this.isEnded) this.spareHold = holdSpares(this.params.storePath);
    else if (!on && this.spareHold !== null) {
      this.spareHold();
      this.spareHold = null;
    }
  }

  /**
   * Wakes the serving thread, which sleeps in read(2): a lookup of a fresh name. A child process
   * makes it, never a thread of ours (waker.ts: a killed daemon could otherwise never exit).
   */
  private wake(): void {
    if (!this.isEnded) wakeLookup(join(this.mountpoint, `${WAKE_PREFIX}${this.wakes++}`));
  }

  private send<T>(message: DistributiveOmit<ToWorker, 'id'>): Promise<T> {
    if (!this.worker || this.isEnded) return Promise.reject(new LayerFsError('ERR_BUSY', 'the mount has ended'));
    const id = this.nextId++;
    const p = new Promise<T>((resolve, reject) => this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject }));
    this.worker.postMessage({ ...message, id } as ToWorker);
    this.wake();
    return p;
  }

  /** `cells`: the commit's shared control cells (overlay-commit.ts), to abort it or watch its progress. */
  commit(note: CommitNote, strict = false, cells?: Int32Array): Promise<{ outcome: FuseCommitOutcome; changed: boolean }> {
    return yieldingSpares(this.params.storePath, pendingRecords(this.activity), () => this.ask({ type: 'commit', note, strict, ...(cells ? { cells } : {}) }));
  }

  state(): Promise<Pick<MountStatus, 'pending' | 'openHandles' | 'committing' | 'requests'> & { changed: boolean }> {
    return this.ask({ type: 'state' });
  }

  changes(): Promise<FuseChanges> {
    return this.ask({ type: 'changes' });
  }

  /** Lazy unmount; the serving thread ends with the connection (a busy one is aborted after a grace period when fusectl allows). */
  async unmount(): Promise<void> {
    if (!this.isEnded) {
      await detachFuse(this.mountpoint);
      const grace = new Promise<'late'>((res) => setTimeout(() => res('late'), 2000).unref());
      // Abort only a connection no live mount uses: once ours has ended its number can be reused
      // by a new mount, which an abort would break (ECONNABORTED instead of a clean end).
      if ((await Promise.race([this.ended.then(() => 'ended' as const), grace])) === 'late' && this.connection !== null && !this.isEnded && !(await connectionMounted(this.connection))) {
        try {
          writeFileSync(`/sys/fs/fuse/connections/${this.connection}/abort`, '1');
        } catch {
          /* no fusectl: the connection ends with its last user */
        }
      }
    }
    void this.worker?.terminate();
    // The spool directory is removed after this: no file is made in it any more.
    await this.spools.stop();
  }
}
