/**
 * Which changed files a mount may store ahead of its commit (prestore.ts), and what a commit may
 * take of what was stored. A candidate is a file whose last handle was released while it held
 * changed content whole in a spool file, PRESTORE_QUIET_MS ago at least (rsync renames a file
 * over its old version right after closing it: by then the old version is known, and offered as
 * the delta base, as the commit itself would). What was stored counts only while the file is
 * unchanged since (its edit number), offers the same delta base, and no gc transaction ran since
 * (the gc epoch): otherwise the commit stores the content itself, as if nothing had been stored.
 */
import { LayerFsError } from '../errors.js';
import { InodeKind, SerialSet, type Inode } from '../store/index.js';
import type { StoredContent } from './content.js';
import type { Node } from './overlay-node.js';
import { OverlayStatus } from './overlay-status.js';
import type { PrestoreJobFile } from './prestore-wire.js';
import { Prestored } from './prestored.js';

export interface PrestoreLimits {
  /** Released at least this long ago (ms). */
  quietMs: number;
  /** A job is made only once this many released files are that quiet. */
  minFiles: number;
  /** At most this many files, and this many bytes, per job (a larger file goes alone). */
  files: number;
  bytes: number;
  /** Larger files are left to the commit (a job's transaction holds the Store's write lock). */
  fileBytes: number;
}

export abstract class OverlayPrestore extends OverlayStatus {
  /** Content stored ahead of the commit, by serial. */
  readonly prestored = new Prestored();
  /** Files released while changed, oldest first, and when (performance.now()). */
  private released: number[] = [];
  private releasedAt: number[] = [];
  private releasedHead = 0;
  /** Serials on the queue, or in the job in flight: a file is released once per handle, and rsync's are released twice. */
  private readonly queued = new SerialSet();

  protected override noteReleased(serial: number): void {
    if (this.queued.has(serial)) return;
    this.queued.add(serial);
    this.released.push(serial);
    this.releasedAt.push(performance.now());
  }

  /** Released files waiting to be looked at. */
  get prestoreQueue(): number {
    return this.released.length - this.releasedHead;
  }

  /**
   * The next files to store ahead, taken off the queue (none until `limits.minFiles` are quiet):
   * those still changed, closed and held whole in a spool file, not stored ahead already.
   */
  prestoreJob(now: number, limits: PrestoreLimits): PrestoreJobFile[] {
    const quietBefore = now - limits.quietMs;
    const at = this.releasedHead + limits.minFiles - 1;
    if (at >= this.released.length || this.releasedAt[at]! > quietBefore) return [];
    const job: PrestoreJobFile[] = [];
    let bytes = 0;
    while (this.releasedHead < this.released.length && this.releasedAt[this.releasedHead]! <= quietBefore && job.length < limits.files) {
      const serial = this.released[this.releasedHead]!;
      const f = this.candidate(serial, limits.fileBytes);
      if (f && job.length > 0 && bytes + f.size > limits.bytes) break; // the next job's first
      this.releasedHead++;
      if (!f) {
        this.queued.delete(serial);
        continue;
      }
      job.push(f);
      bytes += f.size;
    }
    this.compactReleased();
    return job;
  }

  private candidate(serial: number, maxBytes: number): PrestoreJobFile | undefined {
    const n = this.nodes.get(serial);
    if (!n || n.kind !== InodeKind.File || n.socket || n.open !== 0 || !this.alive(n)) return undefined;
    const data = n.data!;
    if (!data.changed || data.size > maxBytes) return undefined;
    const base = this.baseOf(n);
    if (this.prestored.holds(serial, data.edit, base)) return undefined;
    const path = data.spooledWhole;
    if (path === null) return undefined;
    const predecessor = this.versionOf(n);
    return { serial, edit: data.edit, path, size: data.size, base, ...(predecessor ? { predecessor } : {}) };
  }

  private compactReleased(): void {
    if (this.releasedHead < 4096 || this.releasedHead * 2 < this.released.length) return;
    this.released = this.released.slice(this.releasedHead);
    this.releasedAt = this.releasedAt.slice(this.releasedHead);
    this.releasedHead = 0;
  }

  /** The job in flight has ended (stored, stopped or failed): its files may be queued again when released. */
  prestoreDone(job: readonly number[]): void {
    for (const serial of job) this.queued.delete(serial);
  }

  /** What a job stored for file `serial` (from the worker), as of edit `edit` and gc epoch `epoch`. */
  acceptPrestored(serial: number, c: StoredContent, edit: number, base: number, epoch: number): void {
    const n = this.nodes.get(serial);
    if (n?.data && n.data.edit === edit) this.prestored.set(serial, c, edit, base, epoch);
  }

  /** Inside the commit's transaction: the content stored ahead for `n`, if it still holds (epoch: the transaction's). */
  protected prestoredFor(n: Node, epoch: number): StoredContent | undefined {
    if (this.prestored.size === 0) return undefined;
    return this.prestored.valid(n.serial, n.data!.edit, this.baseOf(n), epoch);
  }

  /** After the overlay moved to a new base: nothing stored ahead refers to it, nothing queued is still changed. */
  protected forgetPrestored(): void {
    this.prestored.clear();
    this.released = [];
    this.releasedAt = [];
    this.releasedHead = 0;
    this.queued.clear();
  }

  /** The stored file offered as `n`'s delta base, by serial: its own stored record, or the file it was renamed over (-1: none). */
  private baseOf(n: Node): number {
    return n.inBase ? n.serial : (this.replaced.get(n.serial) ?? -1);
  }

  /** The stored record of the file `serial` was renamed over, if any (a hint: unreadable is none). */
  protected predecessor(serial: number): Inode | undefined {
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

  /** The stored file a changed file is a new version of: the file it was renamed over, else its own stored record. */
  protected versionOf(n: Node): Inode | undefined {
    if (!n.inBase) return this.predecessor(n.serial);
    try {
      const old = this.view.inode(n.serial);
      return old.kind === InodeKind.File ? old : undefined;
    } catch (e) {
      if (e instanceof LayerFsError) return undefined;
      throw e;
    }
  }
}
