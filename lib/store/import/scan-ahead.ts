/**
 * Scans of a list of paths on the addon's pool, each batch reading its files into an arena reused
 * batch after batch: file data costs no allocation and leaves no garbage, and at most ARENAS ×
 * ARENA_BYTES of it is held at once, whatever the number or size of the files. The next batch
 * starts when a stored batch gives its arena back, so ARENAS - 1 batches are read ahead of the
 * one being stored. Files that do not fit (over
 * MAX_DATA_SIZE, or no room left in the arena) come back with metadata only and are streamed by
 * storeContent. Import and the commits of materialized Workspaces both read through it.
 */
import { scanBatch, type ScanBatch } from '../../native/scan.js';
import { SMALL_FILE_THRESHOLD } from '../tree/inode.js';

/** Files larger than this are streamed one at a time instead of being read whole into a batch. */
export const MAX_DATA_SIZE = 1024 * 1024;
/** Bytes of file data one batch reads whole. */
const ARENA_BYTES = 6 * 1024 * 1024;
const BATCH_ENTRIES = 512;
/**
 * Arenas of one scan: the batch being stored and two read ahead. The reads are not what a
 * commit or an import waits for (the storing thread is), so a fourth arena, read while the third
 * waited, only added its 6 MiB to the peak.
 */
const ARENAS = 3;

/** What is scanned: `count` paths, the i-th built on demand. */
export interface PathList {
  readonly count: number;
  path(i: number): Buffer;
}

export interface ScanAheadOptions {
  /** Collect user.* extended attributes (default true). */
  xattrs?: boolean;
}

export class ScanAhead {
  /** Arenas free for the next batch; one is made only when a batch needs it (a small commit makes one). */
  private readonly arenas: Buffer[] = [];
  private readonly batches: { results: Promise<ScanBatch>; arena: Buffer; paths: Buffer[] }[] = [];
  private launched = 0;
  /** Arenas allocated so far (at most ARENAS). */
  private made = 0;

  constructor(
    private readonly list: PathList,
    private readonly opts: ScanAheadOptions = {},
  ) {
    for (let i = 0; i < ARENAS; i++) this.launch();
  }

  private launch(): void {
    if (this.launched >= this.list.count) return;
    // Without a free arena the next batch waits for one, unless nothing is being read.
    if (this.arenas.length === 0 && this.made >= ARENAS && this.batches.length > 0) return;
    const end = Math.min(this.list.count, this.launched + BATCH_ENTRIES);
    const paths: Buffer[] = [];
    for (let i = this.launched; i < end; i++) paths.push(this.list.path(i));
    let arena = this.arenas.pop();
    if (!arena) {
      arena = Buffer.allocUnsafeSlow(ARENA_BYTES);
      this.made++;
    }
    const results = scanBatch(paths, { readData: true, smallFileThreshold: SMALL_FILE_THRESHOLD, maxDataSize: MAX_DATA_SIZE, dataArena: arena, digestOversize: false, xattrs: this.opts.xattrs ?? true });
    // Settled later (next or settle); an early failure must not surface as an unhandled rejection meanwhile.
    results.catch(() => undefined);
    this.batches.push({ arena, results, paths });
    this.launched = end;
  }

  get done(): boolean {
    return this.batches.length === 0 && this.launched >= this.list.count;
  }

  /**
   * The next batch (the wait counted on `clock`) with the paths it scanned; `release` once its
   * entries are stored (nothing may refer to their `data` after), which frees its arena. Its
   * entries are built one at a time (`batch.entry(i)`), so the batches scanned ahead hold the
   * addon's columns rather than an object per entry.
   */
  async next(clock: { waitMs: number }): Promise<{ batch: ScanBatch; paths: Buffer[]; release: () => void }> {
    const tw = performance.now();
    // A caller still holding every arena (no release yet) gets a batch read into a new one.
    if (this.batches.length === 0) this.launch();
    const batch = this.batches.shift()!;
    const results = await batch.results;
    clock.waitMs += performance.now() - tw;
    // A batch whose arena is given back starts the next one; the last batches' arenas are let go
    // (nothing more is read into them).
    const release = (): void => {
      if (this.launched >= this.list.count) return;
      this.arenas.push(batch.arena);
      this.launch();
    };
    return { batch: results, paths: batch.paths, release };
  }

  /** Lets in-flight batches settle so no worker writes into buffers about to be dropped. */
  async settle(): Promise<void> {
    await Promise.allSettled(this.batches.map((b) => b.results));
  }
}
