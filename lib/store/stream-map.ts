/**
 * The Store file mapped while large streamed reads run on a connection (ChunkRunReader.mapStream,
 * FsView.content): pack rows are then copied from the map instead of read with one pread(2) per
 * 8 KiB page, a fifth to a quarter of a large read's time (docs/DECISIONS.md, "A large streamed
 * read maps the Store file while it runs"). Mapped pages read count toward the resident set while
 * mapped, so the map is made anew every MAP_WINDOW_BYTES read and undone when the last such read
 * ends. SQLite changes a map only when no page of it is in use, and re-reads the file's size when
 * it maps again; a checkpoint cannot truncate pages a read snapshot uses. A connection busy with
 * an iterator (the PRAGMA fails) keeps reading with pread(2).
 */
import { MAPPED_BYTES, mapsStreams, prepared, type Db } from './store-file.js';

/**
 * Files this large or larger are streamed with the Store file mapped: below it the mapping's
 * set-up and page faults cost about what the pread(2) calls it saves do.
 */
export const STREAM_MAP_BYTES = 4 * 1024 * 1024;

/** Bytes a mapped stream reads before the map is made anew (its pages leave the resident set). */
export const MAP_WINDOW_BYTES = 32 * 1024 * 1024;

/** A streamed read's hold on the mapped Store file. */
export interface StreamMap {
  /** Counts `bytes` more read: past MAP_WINDOW_BYTES the map is made anew. */
  advance(bytes: number): void;
  /** The read ended (or was abandoned): the map goes when no other read holds it. */
  end(): void;
}

const UNMAPPED: StreamMap = { advance: () => {}, end: () => {} };

/** One connection's map, shared by the streamed reads under way on it. */
export class StreamMapper {
  /** Streamed reads under way that map the file; the map goes when the last ends. */
  private streams = 0;
  /** Bytes those reads returned since the map was last made. */
  private read = 0;

  constructor(private readonly db: Db) {}

  /**
   * Maps the file for a streamed read of a `bytes`-byte file, on connections that allow it
   * (OpenOptions.mapStreams); returns the read's hold on the map.
   */
  map(bytes: number): StreamMap {
    if (bytes < STREAM_MAP_BYTES || !mapsStreams(this.db)) return UNMAPPED;
    if (this.streams === 0 && !this.set(MAPPED_BYTES)) return UNMAPPED;
    this.streams++;
    let ended = false;
    return {
      advance: (read) => {
        if (ended || (this.read += read) < MAP_WINDOW_BYTES) return;
        this.read = 0;
        if (this.set(0)) this.set(MAPPED_BYTES);
      },
      end: () => {
        if (ended) return;
        ended = true;
        if (--this.streams === 0) this.set(0);
      },
    };
  }

  private set(bytes: number): boolean {
    try {
      prepared(this.db, `PRAGMA mmap_size = ${bytes}`).get();
      return true;
    } catch {
      return false;
    }
  }
}
