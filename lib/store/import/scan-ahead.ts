/**
 * Scans of a list of paths on the addon's pool, BATCHES_IN_FLIGHT batches ahead of the one being
 * stored, each reading its files into an arena reused batch after batch: file data costs no
 * allocation and leaves no garbage, and at most 2 × (BATCHES_IN_FLIGHT + 1) × ARENA_BYTES of it
 * is held at once, whatever the number or size of the files. When the list knows its files'
 * sizes (a commit's change set), a batch ends where its arena is full. Files that do not fit
 * (over MAX_DATA_SIZE, or no room left) come back with metadata only; those up to MAX_DATA_SIZE
 * are read again as soon as the batch is scanned, into a second arena, so the writer finds them
 * read instead of reading each alone while it waits (the real tree's commit read 2,956 of its
 * ~30,000 changed files alone, 486 ms of waiting; none now). The rest are streamed by
 * storeContent. Import and the commits of materialized Workspaces both read through it.
 */
import { sameFile, scanBatch, type ScanBatch, type ScanEntry } from '../../native/scan.js';
import { SMALL_FILE_THRESHOLD } from '../tree/inode.js';

/** Files larger than this are streamed one at a time instead of being read whole into a batch. */
export const MAX_DATA_SIZE = 1024 * 1024;
/** Bytes of file data one batch reads whole. */
const ARENA_BYTES = 6 * 1024 * 1024;
const BATCH_ENTRIES = 512;
const BATCHES_IN_FLIGHT = 3;

/** A scanned batch as its reader sees it: `count` entries, entry i built on demand. */
export interface ScannedBatch {
  readonly count: number;
  entry(i: number): ScanEntry | undefined;
}

/** What is scanned: `count` paths, the i-th built on demand. */
export interface PathList {
  readonly count: number;
  path(i: number): Buffer;
  /**
   * The size path i had when it was listed, if the list knows it: batches then end where their
   * files would overflow the arena (a file that grew since may be left for the second read).
   */
  size?(i: number): number;
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

/** A batch in flight: its paths and arena; once read, its entries and the second arena its unread files took, if any. */
interface Launched {
  results: Promise<{ batch: ScannedBatch; second?: Buffer }>;
  arena: Buffer;
  paths: Buffer[];
}

export class ScanAhead {
  /** Arenas free for the next batch; one is made only when a batch needs it (a small commit makes one). */
  private readonly arenas: Buffer[] = [];
  private readonly batches: Launched[] = [];
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
    const end = this.batchEnd(Math.min(this.list.count, this.launched + Math.ceil(BATCH_ENTRIES / divide)), Math.ceil(ARENA_BYTES / divide));
    const paths: Buffer[] = [];
    for (let i = this.launched; i < end; i++) paths.push(this.list.path(i));
    const arena = this.arena();
    // The second read is started as soon as the first ends, on the addon's threads, not when
    // the writer gets to the batch.
    const results = this.scan(paths, arena).then((first) => this.readUnread(paths, first));
    // Settled later (next or settle); an early failure must not surface as an unhandled rejection meanwhile.
    results.catch(() => undefined);
    this.batches.push({ arena, paths, results });
    this.launched = end;
  }

  /** Where the batch starting at `launched` ends: at `max`, or before the file its arena cannot take. */
  private batchEnd(max: number, arenaBytes: number): number {
    const size = this.list.size?.bind(this.list);
    if (!size) return max;
    let bytes = 0;
    for (let i = this.launched; i < max; i++) {
      const n = size(i);
      if (n > MAX_DATA_SIZE) continue;
      bytes += n;
      if (bytes > arenaBytes && i > this.launched) return i;
    }
    return max;
  }

  private arena(): Buffer {
    return this.arenas.pop() ?? Buffer.allocUnsafeSlow(Math.ceil(ARENA_BYTES / (this.opts.divide ?? 1)));
  }

  private scan(paths: Buffer[], arena: Buffer): Promise<ScanBatch> {
    return scanBatch(paths, { readData: true, smallFileThreshold: SMALL_FILE_THRESHOLD, maxDataSize: MAX_DATA_SIZE, dataArena: arena, digestOversize: false, xattrs: this.opts.xattrs ?? true });
  }

  /**
   * `first` with its files that did not fit its arena read again into a second arena (those
   * that fit it; the others stay unread). A file that changed between the two reads keeps its
   * first entry: storeContent reads it then and reports the change.
   */
  private async readUnread(paths: Buffer[], first: ScanBatch): Promise<{ batch: ScannedBatch; second?: Buffer }> {
    const unread = first.unread(MAX_DATA_SIZE);
    if (unread.length === 0) return { batch: first };
    const second = this.arena();
    const again = await this.scan(unread.map((i) => paths[i]!), second);
    const read = new Map<number, number>();
    unread.forEach((i, k) => read.set(i, k));
    const batch: ScannedBatch = {
      count: first.count,
      entry: (i) => {
        const e = first.entry(i);
        const k = read.get(i);
        if (k === undefined || !e || e.error) return e;
        const a = again.entry(k);
        return a && !a.error && a.data && sameFile(e, a) ? a : e;
      },
    };
    return { batch, second };
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
  async next(clock: { waitMs: number }): Promise<{ batch: ScannedBatch; paths: Buffer[]; release: () => void }> {
    const tw = performance.now();
    const batch = this.batches.shift()!;
    const { batch: scanned, second } = await batch.results;
    clock.waitMs += performance.now() - tw;
    this.launch();
    // The last batches' arenas are let go: nothing more is read into them.
    const release = () => {
      if (this.launched >= this.list.count) return;
      this.arenas.push(batch.arena);
      if (second) this.arenas.push(second);
    };
    return { batch: scanned, paths: batch.paths, release };
  }

  /** Lets in-flight batches settle so no worker writes into buffers about to be dropped. */
  async settle(): Promise<void> {
    await Promise.allSettled(this.batches.map((b) => b.results));
  }
}
