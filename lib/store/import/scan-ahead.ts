/**
 * Scans of a list of paths on the addon's pool, BATCHES_IN_FLIGHT batches ahead of the one being
 * stored, each reading its files into an arena reused batch after batch: file data costs no
 * allocation and leaves no garbage, and at most (BATCHES_IN_FLIGHT + 1) × ARENA_BYTES of it is
 * held at once, whatever the number or size of the files. Files that do not fit (over
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
const BATCHES_IN_FLIGHT = 3;

/** What is scanned: `count` paths, the i-th built on demand. */
export interface PathList {
  readonly count: number;
  path(i: number): Buffer;
}

export interface ScanAheadOptions {
  /** Collect user.* extended attributes (default true). */
  xattrs?: boolean;
  /**
   * Batches this many times smaller (arenas and entries alike), the same number in flight: a
   * commit's arenas are live the whole time it stores, beside its change set and editor.
   */
  divide?: number;
}

export class ScanAhead {
  /** Arenas free for the next batch; one is made only when a batch needs it (a small commit makes one). */
  private readonly arenas: Buffer[] = [];
  private readonly batches: { results: Promise<ScanBatch>; arena: Buffer; paths: Buffer[] }[] = [];
  private launched = 0;

  constructor(
    private readonly list: PathList,
    private readonly opts: ScanAheadOptions = {},
  ) {
    for (let i = 0; i < BATCHES_IN_FLIGHT; i++) this.launch();
  }

  private launch(): void {
    if (this.launched >= this.list.count) return;
    const divide = this.opts.divide ?? 1;
    const end = Math.min(this.list.count, this.launched + Math.ceil(BATCH_ENTRIES / divide));
    const paths: Buffer[] = [];
    for (let i = this.launched; i < end; i++) paths.push(this.list.path(i));
    const arena = this.arenas.pop() ?? Buffer.allocUnsafeSlow(Math.ceil(ARENA_BYTES / divide));
    const results = scanBatch(paths, { readData: true, smallFileThreshold: SMALL_FILE_THRESHOLD, maxDataSize: MAX_DATA_SIZE, dataArena: arena, digestOversize: false, xattrs: this.opts.xattrs ?? true });
    // Settled later (next or settle); an early failure must not surface as an unhandled rejection meanwhile.
    results.catch(() => undefined);
    this.batches.push({ arena, results, paths });
    this.launched = end;
  }

  get done(): boolean {
    return this.batches.length === 0;
  }

  /**
   * The next batch (the wait counted on `clock`) with the paths it scanned; `release` once its
   * entries are stored (nothing may refer to their `data` after), which frees its arena. Its
   * entries are built one at a time (`batch.entry(i)`), so the batches scanned ahead hold the
   * addon's columns rather than an object per entry.
   */
  async next(clock: { waitMs: number }): Promise<{ batch: ScanBatch; paths: Buffer[]; release: () => void }> {
    const tw = performance.now();
    const batch = this.batches.shift()!;
    const results = await batch.results;
    clock.waitMs += performance.now() - tw;
    this.launch();
    // The last batches' arenas are let go: nothing more is read into them.
    return { batch: results, paths: batch.paths, release: () => this.launched < this.list.count && this.arenas.push(batch.arena) };
  }

  /** Lets in-flight batches settle so no worker writes into buffers about to be dropped. */
  async settle(): Promise<void> {
    await Promise.allSettled(this.batches.map((b) => b.results));
  }
}
