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
 */
import { scanPaths, type ScanEntry } from '../native/scan.js';
import { chunkDeltaSource, ContentForm, storeContent, SMALL_FILE_THRESHOLD, type Inode, type ObjectWriter } from '../store/index.js';
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

/** A changed file whose content is its spool file, whole. */
export interface SpooledFile {
  serial: number;
  path: string;
  size: number;
  /** The stored file it is a new version of (delta bases), if any. */
  predecessor: Inode | undefined;
}

function scan(files: SpooledFile[], arena: Buffer): Promise<ScanEntry[]> {
  const p = scanPaths(
    files.map((f) => f.path),
    { readData: true, smallFileThreshold: SMALL_FILE_THRESHOLD, maxDataSize: MAX_DATA_SIZE, dataArena: arena, digestOversize: false, xattrs: false },
  );
  // Settled later; an early failure must not surface as an unhandled rejection meanwhile.
  p.catch(() => undefined);
  return p;
}

/**
 * Stores the content of `files` (in this order) into `out` by serial. A file the scan cannot
 * read as it expects (gone, or shorter than the content: a truncate extended it past what was
 * written) is left out of `out`; the caller stores it through the overlay's own path. `step`
 * runs once per file (progress for heartbeats, and the point where an abort is honoured).
 */
export async function storeSpooled(files: SpooledFile[], w: ObjectWriter, build: ContentBuild, out: StoredContents, step: () => void): Promise<void> {
  const batches: { from: number; entries: Promise<ScanEntry[]>; arena: Buffer }[] = [];
  /** Arenas whose batch is stored: read into again by the next batch. */
  const arenas: Buffer[] = [];
  let launched = 0;
  const launch = () => {
    if (launched >= files.length) return;
    // A batch ends where its arena would overflow, so its files are read whole, not streamed.
    let to = launched;
    for (let bytes = 0; to < files.length && to - launched < SCAN_BATCH; to++) {
      const whole = files[to]!.size <= MAX_DATA_SIZE ? files[to]!.size : 0;
      if (to > launched && bytes + whole > ARENA_BYTES) break;
      bytes += whole;
    }
    const arena = arenas.pop() ?? Buffer.allocUnsafeSlow(ARENA_BYTES);
    batches.push({ from: launched, entries: scan(files.slice(launched, to), arena), arena });
    launched = to;
  };
  for (let i = 0; i < BATCHES_IN_FLIGHT; i++) launch();
  try {
    while (batches.length > 0) {
      const { from, entries, arena } = batches.shift()!;
      const scanned = await entries;
      launch();
      for (let j = 0; j < scanned.length; j++) {
        const f = files[from + j]!;
        const e = scanned[j]!;
        if (!e.error && e.kind === 'file' && e.size === f.size) {
          const before = f.predecessor;
          // A changed large file's new chunks are offered the old version's chunks as delta bases.
          w.deltaSource = chunkDeltaSource(before, e.size, (id) => w.read(id));
          let c;
          try {
            c = await storeContent(e, Buffer.from(f.path), w);
          } finally {
            w.deltaSource = undefined;
          }
          // A changed small file: its blob is still the newest of its group.
          if (c.form === ContentForm.Whole && before?.form === ContentForm.Whole && !before.content!.equals(c.content!)) w.suggestBase(c.content!, before.content!);
          out.set(f.serial, { form: c.form, id: c.content, size: e.size });
          build.bytesRead += e.size;
        }
        step();
      }
      // Nothing refers to this batch's data any more (storeContent copies what it keeps).
      arenas.push(arena);
    }
  } finally {
    await Promise.allSettled(batches.map((b) => b.entries));
  }
}
