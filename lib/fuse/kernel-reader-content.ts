/**
 * How a reader thread reads stored content for a READ: the chunks the range covers are found in
 * the extent tree (nodes cached), then read as one run (lib/store ChunkRunReader: one locator
 * query, one row read per stretch of a pack, every chunk verified). Nothing of the content is
 * cached: the kernel keeps what it reads in its page cache, and readahead asks for disjoint
 * ranges, so a chunk cache here would only hold bytes nobody asks for again (and cost a map
 * entry and garbage per chunk).
 */
import type { ChunkRef, ChunkRunReader, StartedViews } from '../store/chunk-run.js';
import type { Store } from '../store/index.js';
import { chunkAt, ExtentNodes } from './extents.js';

export class StreamedContent {
  private readonly nodes: ExtentNodes;
  private readonly runs: ChunkRunReader;

  constructor(store: Store) {
    this.nodes = new ExtentNodes(store.objects, 4096);
    this.runs = store.chunkRuns();
  }

  /** Copies bytes [pos, pos + len) of the extent tree `root` into dst at dstOff. */
  read(root: Buffer, pos: number, len: number, dst: Buffer, dstOff: number): void {
    let o = dstOff;
    for (const v of this.views(root, pos, len)) o += v.copy(dst, o);
  }

  /** Bytes [pos, pos + len) of the extent tree `root`, verified, as views valid until the next read() or views(). */
  views(root: Buffer, pos: number, len: number): Buffer[] {
    return this.finish(this.start(root, pos, len, 0));
  }

  /**
   * Starts views() (its rows read, their decoding started on the addon's pool); finish() waits
   * for it. Two may be started at once on different lanes (ChunkRunReader.startViews): a reader
   * starts its next READ before it finishes and answers the current one.
   */
  start(root: Buffer, pos: number, len: number, lane: 0 | 1): StartedViews | null {
    if (len <= 0) return null;
    const run: ChunkRef[] = [];
    let first = -1;
    for (let x = pos; x < pos + len; ) {
      const ch = chunkAt(this.nodes, root, x);
      if (first < 0) first = ch.start;
      run.push(ch);
      x = ch.start + ch.length;
    }
    return this.runs.startViews(run, pos - first, len, lane);
  }

  /** The views of a started read (see start). */
  finish(s: StartedViews | null): Buffer[] {
    return s ? this.runs.finishViews(s) : [];
  }
}
