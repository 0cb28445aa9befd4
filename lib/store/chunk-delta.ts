/**
 * Delta bases for the new chunks of a changed large file (docs/FORMAT.md "Physical forms",
 * deltas). A new release of a generated file (a bundle, a source map, a type declaration) keeps
 * most of its text but shifts it, so content-defined chunking finds the unchanged runs and the
 * chunks between them are new; each new chunk is offered the old file's chunks at the same place.
 * "The same place" is found from the last chunk both versions share (its old offset minus its new
 * one), or, before any, from the position scaled by the two sizes.
 */
import { LayerFsError } from '../errors.js';
import { DELTA_MAX_BASES } from './codec.js';
import { decodeExtentNode } from './tree/extents.js';
import { ContentForm, InodeKind, SMALL_FILE_THRESHOLD, type Inode } from './tree/inode.js';

/** Bytes of the old file either side of the estimated place that a new chunk is offered. */
const SLACK = 16 * 1024;
/** The bases of one delta, at most: a zstd dictionary this large still costs well under a millisecond. */
const MAX_BASE_BYTES = 128 * 1024;
/**
 * Consecutive new chunks whose delta did not pay, with none that did, after which a file is
 * stored as before: a recompiled binary shares little with its previous build (the real tree's
 * 131 MB native module: 37.1 MB whole, 35.5 MB as a whole-file zstd patch), and trying each of
 * its 8,000 chunks would cost seconds for nothing. On the real tree's release upgrade (with
 * PROBE_EVERY) 12 tried 12,168 chunk deltas and stored 232,460,477 B, 24 tried 13,084 and stored
 * 232,653,204 B, 8 tried 11,786 and stored 232,727,185 B: a chunk whose delta barely pays
 * compresses about as well in its row.
 */
export const GIVE_UP_AFTER = 12;
/**
 * Once GIVE_UP_AFTER deltas in a row did not pay, even in a file where earlier ones did, only
 * every PROBE_EVERY-th new chunk is tried; a probe that pays resumes trying each one. On the
 * real tree's release upgrade a third of the chunk deltas tried did not pay (5,224 of 15,489),
 * half of them in runs of 24 or more, and a trial that does not pay costs more than one that
 * does (its chunk has fewer long matches in the old chunks).
 */
export const PROBE_EVERY = 8;

export class ChunkDeltaSource {
  private readonly starts: number[] = [];
  private readonly ids: Buffer[] = [];
  private readonly lengths: number[] = [];
  private readonly oldOffset = new Map<string, number>();
  private readonly oldSize: number;
  /** Offset in the new file of the next chunk passed to next(). */
  private pos = 0;
  /** Old offset minus new offset at the last shared chunk, once one was seen. */
  private shift: number | undefined;
  /** Trials in a row whose delta did not pay. */
  private misses = 0;
  private hits = 0;
  /** Fresh chunks passed while probing (misses reached GIVE_UP_AFTER). */
  private passed = 0;

  /** `chunks`: the old version's chunks in file order. `newSize`: the new version's size. */
  constructor(
    chunks: { id: Buffer; length: number }[],
    private readonly newSize: number,
  ) {
    let at = 0;
    for (const c of chunks) {
      this.starts.push(at);
      this.ids.push(c.id);
      this.lengths.push(c.length);
      const k = c.id.toString('latin1');
      if (!this.oldOffset.has(k)) this.oldOffset.set(k, at);
      at += c.length;
    }
    this.oldSize = at;
  }

  /**
   * False once the file gave up on deltas: GIVE_UP_AFTER misses in a row before any delta paid.
   * A file where one did only probes after as many misses (PROBE_EVERY).
   */
  get active(): boolean {
    return this.hits > 0 || this.misses < GIVE_UP_AFTER;
  }

  /** Whether the next fresh chunk is tried (active, and a probe once GIVE_UP_AFTER misses in a row). */
  private tries(): boolean {
    if (!this.active) return false;
    if (this.misses < GIVE_UP_AFTER) return true;
    return ++this.passed % PROBE_EVERY === 0;
  }

  /**
   * The next chunk of the new file, in order. For a chunk the writer will store (`fresh`), the
   * old chunks to offer as its bases (in file order, possibly none); for the others undefined.
   */
  next(id: Buffer, length: number, fresh: boolean): Buffer[] | undefined {
    const at = this.pos;
    this.pos += length;
    const old = this.oldOffset.get(id.toString('latin1'));
    if (old !== undefined) this.shift = old - at;
    if (!fresh || !this.tries()) return undefined;
    const place = this.shift !== undefined ? at + this.shift : Math.round((at * this.oldSize) / Math.max(1, this.newSize));
    return this.around(place - SLACK, place + length + SLACK);
  }

  /** Reports whether the delta offered for the last fresh chunk was kept. */
  result(kept: boolean): void {
    if (kept) {
      this.hits++;
      this.misses = 0;
      this.passed = 0;
    } else this.misses++;
  }

  /** Old chunks overlapping [from, to), nearest the middle first cut to the bounds, in file order. */
  private around(from: number, to: number): Buffer[] {
    if (this.ids.length === 0) return [];
    from = Math.max(0, from);
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= from) lo = mid;
      else hi = mid - 1;
    }
    const out: Buffer[] = [];
    let bytes = 0;
    for (let i = lo; i < this.ids.length && this.starts[i]! < to && out.length < DELTA_MAX_BASES; i++) {
      if (bytes + this.lengths[i]! > MAX_BASE_BYTES && out.length > 0) break;
      out.push(this.ids[i]!);
      bytes += this.lengths[i]!;
    }
    return out;
  }
}

/** The chunks of the extent tree `root`, in file order. */
export function extentChunks(root: Buffer, load: (id: Buffer) => Buffer): { id: Buffer; length: number }[] {
  const out: { id: Buffer; length: number }[] = [];
  const visit = (id: Buffer, depth: number): void => {
    const n = decodeExtentNode(load(id), 'extent node');
    if (depth > 16) throw new LayerFsError('ERR_CORRUPT', `extent tree ${root.toString('hex')} is deeper than any writer makes`, { id: root.toString('hex'), hint: 'run layerfs verify' });
    n.ids.forEach((child, i) => (n.level === 0 ? out.push({ id: child, length: n.lengths[i]! }) : visit(child, depth + 1)));
  };
  visit(root, 0);
  return out;
}

/**
 * The delta source for storing a new version of `old` of `newSize` bytes, when both are chunked
 * files; undefined otherwise, or when the old extent tree cannot be read (a hint only: the file
 * is then stored as before, never a failed commit).
 */
export function chunkDeltaSource(old: Inode | undefined, newSize: number, load: (id: Buffer) => Buffer): ChunkDeltaSource | undefined {
  if (!old || old.kind !== InodeKind.File || old.form !== ContentForm.Extents || !old.content || newSize < SMALL_FILE_THRESHOLD) return undefined;
  try {
    return new ChunkDeltaSource(extentChunks(old.content, load), newSize);
  } catch (e) {
    if (e instanceof LayerFsError) return undefined;
    throw e;
  }
}
