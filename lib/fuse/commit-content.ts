/**
 * A commit's content through import's pipeline: changed files whose bytes all sit in a spool
 * file (new files, files rewritten from the start: what rsync, package managers and `cp` leave)
 * are read, chunked and hashed on the addon's threads a few batches ahead of the thread that
 * stores them, and files over MAX_DATA_SIZE are streamed in pieces, exactly as import reads a
 * tree (lib/store/import/content.ts storeContent). Each batch reads its files into an arena of
 * ARENA_BYTES reused batch after batch (as import's scan-ahead does), so file data costs no
 * allocation and leaves no garbage: at most (BATCHES_IN_FLIGHT + 1) arenas are held, plus a few
 * pieces of one large file. Files that do not fit in what is left of the arena are streamed.
 * Everything else (in-memory spools, copy-on-write pages over stored content) keeps the overlay's
 * own path (content.ts FileData.store), which re-chunks only around what changed.
 *
 * Two forms: storeSpooled awaits each batch (in-process commits); storeSpooledSync waits for it
 * on the calling thread (the mount daemon's serving thread, which never returns to its event
 * loop inside a commit), so the addon's threads open, read, chunk and hash the next batches
 * while that thread stores this one.
 */
import { scanPaths, startScan, type ScanEntry, type ScanEntryOk } from '../native/scan.js';
import { chunkDeltaSource, ContentForm, storeContent, storeFileContentAhead, SMALL_FILE_THRESHOLD, type Inode, type ObjectWriter, type StoredContent } from '../store/index.js';
import type { ContentBuild } from './content.js';
import type { StoredContents } from './stored-contents.js';

/** Spool files per scan batch. */
const SCAN_BATCH = 128;
/** Files larger than this are streamed rather than read whole into a batch. */
const MAX_DATA_SIZE = 1024 * 1024;
/**
 * Bytes of file data one batch reads whole, into an arena of its own. Not a Buffer per file:
 * those are small blocks malloc'd on the addon's threads and freed only when the garbage
 * collector gets to them, so they add to glibc's arenas (which do not shrink) beyond what is in
 * flight (docs/BENCHMARKS.md, "The mount daemon's memory during a commit of many small files").
 */
const ARENA_BYTES = 4 * 1024 * 1024;
/** Batches read ahead of the one being stored. */
const BATCHES_IN_FLIGHT = 2;
/**
 * storeSpooledSync's arenas and the largest file it reads whole (larger ones are streamed): it
 * runs in the mount daemon, whose memory is what a Workspace costs (three 4 MiB arenas filled by
 * 1 MiB files measured +10–15 MiB of the daemon's peak over a whole-tree commit).
 */
const SYNC_MAX_SIZE = 512 * 1024;
const SYNC_ARENA_BYTES = 2 * 1024 * 1024;

/**
 * Changed files whose content is their spool file, whole, in the order they are stored. By
 * index, not an object each: a whole-tree commit has ~84,000, and an object, a path and a
 * closure per file held ~17 MiB of the mount daemon's heap for the length of the commit.
 */
export interface SpooledFiles {
  readonly count: number;
  serial(i: number): number;
  size(i: number): number;
  /** The spool file (asked for when its batch starts). */
  path(i: number): string;
  /**
   * The stored file it is a new version of (delta bases), if any: looked up when the file is
   * stored, so a commit of many files never holds all their old records at once.
   */
  predecessor(i: number): Inode | undefined;
}

const SCAN_OPTIONS = { readData: true, smallFileThreshold: SMALL_FILE_THRESHOLD, maxDataSize: MAX_DATA_SIZE, digestOversize: false, xattrs: false };

function scan(paths: string[], arena: Buffer): Promise<ScanEntry[]> {
  const p = scanPaths(paths, { ...SCAN_OPTIONS, dataArena: arena });
  // Settled later; an early failure must not surface as an unhandled rejection meanwhile.
  p.catch(() => undefined);
  return p;
}

/** Cuts `files` into scan batches; `from` the first file of each, `arena` where it reads into. */
class Batches<T> {
  readonly queue: { from: number; scanned: T; arena: Buffer }[] = [];
  private launched = 0;

  constructor(
    private readonly files: SpooledFiles,
    private readonly start: (paths: string[], arena: Buffer) => T,
    private readonly arenaBytes = ARENA_BYTES,
    private readonly maxDataSize = MAX_DATA_SIZE,
    /** Arenas whose batch is stored: read into again by the next batch (and by the caller's next call, when it keeps them). */
    readonly arenas: Buffer[] = [],
  ) {
    for (let i = 0; i < BATCHES_IN_FLIGHT; i++) this.launch();
  }

  launch(): void {
    const files = this.files;
    if (this.launched >= files.count) return;
    // A batch ends where its arena would overflow, so its files are read whole, not streamed.
    let to = this.launched;
    for (let bytes = 0; to < files.count && to - this.launched < SCAN_BATCH; to++) {
      const whole = files.size(to) <= this.maxDataSize ? files.size(to) : 0;
      if (to > this.launched && bytes + whole > this.arenaBytes) break;
      bytes += whole;
    }
    const arena = this.arenas.pop() ?? Buffer.allocUnsafeSlow(this.arenaBytes);
    const paths: string[] = [];
    for (let i = this.launched; i < to; i++) paths.push(files.path(i));
    this.queue.push({ from: this.launched, scanned: this.start(paths, arena), arena });
    this.launched = to;
  }
}

/** Whether the scan found file `i` as its content: a file of the content's size. */
function found(files: SpooledFiles, i: number, e: ScanEntry): e is ScanEntryOk {
  return !e.error && e.kind === 'file' && e.size === files.size(i);
}

/**
 * Before scanned file `i` is stored: a changed large file's new chunks are offered the old
 * version's chunks as delta bases (cleared by `stored`). Returns the old version.
 */
function storing(files: SpooledFiles, i: number, w: ObjectWriter): Inode | undefined {
  const before = files.predecessor(i);
  w.deltaSource = chunkDeltaSource(before, files.size(i), (id) => w.read(id));
  return before;
}

/** After file `i` was stored as `c`: a changed small file's blob is offered the old blob; `c` goes to `out`. */
function stored(files: SpooledFiles, i: number, before: Inode | undefined, c: StoredContent, w: ObjectWriter, build: ContentBuild, out: StoredContents): void {
  // Still the newest of its group.
  if (c.form === ContentForm.Whole && before?.form === ContentForm.Whole && !before.content!.equals(c.content!)) w.suggestBase(c.content!, before.content!);
  out.set(files.serial(i), { form: c.form, id: c.content, size: files.size(i) });
  build.bytesRead += files.size(i);
}

/**
 * Stores the content of `files` (in this order) into `out` by serial. A file the scan cannot
 * read as it expects (gone, or shorter than the content: a truncate extended it past what was
 * written) is left out of `out`; the caller stores it through the overlay's own path. `step`
 * runs once per file (progress for heartbeats, and the point where an abort is honoured).
 */
export async function storeSpooled(files: SpooledFiles, w: ObjectWriter, build: ContentBuild, out: StoredContents, step: () => void): Promise<void> {
  const batches = new Batches(files, scan);
  try {
    while (batches.queue.length > 0) {
      const { from, scanned, arena } = batches.queue.shift()!;
      const entries = await scanned;
      batches.launch();
      for (let j = 0; j < entries.length; j++) {
        const i = from + j;
        const e = entries[j]!;
        if (found(files, i, e)) {
          const before = storing(files, i, w);
          let c: StoredContent;
          try {
            c = await storeContent(e, Buffer.from(files.path(i)), w);
          } finally {
            w.deltaSource = undefined;
          }
          stored(files, i, before, c, w, build, out);
        }
        step();
      }
      // Nothing refers to this batch's data any more (storeContent copies what it keeps).
      batches.arenas.push(arena);
    }
  } finally {
    await Promise.allSettled(batches.queue.map((b) => b.scanned));
  }
}

/**
 * storeSpooled on a thread that cannot await: each batch is waited for here. Files over
 * SYNC_MAX_SIZE are streamed, the addon's threads reading, cutting and hashing a few pieces
 * ahead while this thread stores one, with `pause` between pieces (a commit answers read-only
 * requests there). `arenas`: the batches' arenas, kept by a caller that stores batch after batch
 * (a mount's prestore thread), which would otherwise leave three to the collector each time.
 */
export function storeSpooledSync(files: SpooledFiles, w: ObjectWriter, build: ContentBuild, out: StoredContents, step: () => void, pause?: () => void, arenas: Buffer[] = []): void {
  const batches = new Batches(files, (paths, arena) => startScan(paths, { ...SCAN_OPTIONS, maxDataSize: SYNC_MAX_SIZE, dataArena: arena }), SYNC_ARENA_BYTES, SYNC_MAX_SIZE, arenas);
  try {
    while (batches.queue.length > 0) {
      const { from, scanned, arena } = batches.queue[0]!;
      const batch = scanned.take();
      batches.queue.shift();
      batches.launch();
      for (let j = 0; j < batch.count; j++) {
        const i = from + j;
        const e = batch.entry(j)!;
        if (found(files, i, e)) {
          const before = storing(files, i, w);
          let c: StoredContent;
          try {
            c = storeFileContentAhead(e, Buffer.from(files.path(i)), w, pause);
          } finally {
            w.deltaSource = undefined;
          }
          stored(files, i, before, c, w, build, out);
        }
        step();
      }
      batches.arenas.push(arena);
    }
  } finally {
    // Batches still running write into their arenas: waited for before anything else can reuse them.
    for (const b of batches.queue) {
      try {
        b.scanned.take();
        batches.arenas.push(b.arena);
      } catch {
        // Its error is of no use now: the commit is already failing.
      }
    }
  }
}
