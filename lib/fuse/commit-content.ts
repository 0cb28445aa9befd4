/**
 * A commit's content through import's pipeline: changed files whose bytes all sit in a spool
 * file (new files, files rewritten from the start: what rsync, package managers and `cp` leave)
 * are read, chunked and hashed on the addon's threads a few batches ahead of the thread that
 * stores them, and files over MAX_DATA_SIZE are streamed in pieces, exactly as import reads a
 * tree (lib/store/import/content.ts storeContent). In-flight bytes are bounded: BATCHES_IN_FLIGHT
 * batches of at most MAX_BATCH_DATA bytes read whole, and a few pieces of one large file.
 * Everything else (in-memory spools, copy-on-write pages over stored content) keeps the overlay's
 * own path (content.ts FileData.store), which re-chunks only around what changed.
 */
import { scanPaths, type ScanEntry } from '../native/scan.js';
import { chunkDeltaSource, ContentForm, storeContent, SMALL_FILE_THRESHOLD, type Inode, type ObjectWriter } from '../store/index.js';
import type { ContentBuild, StoredContent } from './content.js';

/** Spool files per scan batch. */
const SCAN_BATCH = 128;
/** Files larger than this are streamed rather than read whole into a batch. */
const MAX_DATA_SIZE = 1024 * 1024;
/** The most file bytes one batch reads whole; files past it are streamed like large ones. */
const MAX_BATCH_DATA = 8 * 1024 * 1024;
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

function scan(files: SpooledFile[]): Promise<ScanEntry[]> {
  const p = scanPaths(
    files.map((f) => f.path),
    { readData: true, smallFileThreshold: SMALL_FILE_THRESHOLD, maxDataSize: MAX_DATA_SIZE, maxBatchData: MAX_BATCH_DATA, digestOversize: false, xattrs: false },
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
export async function storeSpooled(files: SpooledFile[], w: ObjectWriter, build: ContentBuild, out: Map<number, StoredContent>, step: () => void): Promise<void> {
  const batches: { from: number; entries: Promise<ScanEntry[]> }[] = [];
  let launched = 0;
  const launch = () => {
    if (launched >= files.length) return;
    const to = Math.min(files.length, launched + SCAN_BATCH);
    batches.push({ from: launched, entries: scan(files.slice(launched, to)) });
    launched = to;
  };
  for (let i = 0; i < BATCHES_IN_FLIGHT; i++) launch();
  try {
    while (batches.length > 0) {
      const { from, entries } = batches.shift()!;
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
    }
  } finally {
    await Promise.allSettled(batches.map((b) => b.entries));
  }
}
