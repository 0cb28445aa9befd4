/**
 * Copy-on-write over a stored file's content (native/cow.h): which 4 KiB pages a write copied
 * from the stored base, where each byte of a read comes from (spool, stored base or zeros), and
 * the commit-time re-chunk that starts at the chunk before each change and stops where new cut
 * points meet old ones again. The bytes themselves stay with the caller: it reads the Store and
 * its spool as each plan says.
 */
import { invalidArgument } from '../errors.js';
import { native, type RawCowPages } from './binding.js';
import { resolveParams, type ChunkerParams } from './params.js';
import { callNative } from './wrap.js';

/** Copy-on-write granularity over stored content. */
export const COW_PAGE: number = native.cowPage;

/** Where a read segment's bytes come from. */
export enum CowSource {
  Zero = 0,
  Spool = 1,
  Base = 2,
}

export interface CowSegment {
  source: CowSource;
  pos: number;
  len: number;
}

/** Stored bytes [start, start + len) that must be in the spool before a write lands. */
export interface CowCopy {
  start: number;
  len: number;
}

/** What the re-chunk asks of its caller; a callback that throws stops it, and the error propagates unchanged. */
export interface RechunkIo {
  /** Start of the old chunk holding old offset x. */
  chunkStart(x: number): number;
  /** Fills dst[0, len) with the new content at pos. */
  read(pos: number, len: number, dst: Buffer): void;
  /**
   * The next new chunk, which starts at `offset`, and its id (objectId of the chunk domain, a
   * Buffer of its own). `bytes` is a view the re-chunk reuses: it may be read only during the
   * call (copy what must outlive it). Chunks are hashed a batch at a time on the addon's pool,
   * so emit() calls come in bursts, always before the replace() that names them.
   */
  emit(offset: number, bytes: Buffer, id: Buffer): void;
  /** Old chunks covering [from, to) are replaced by the last `chunks` emitted. */
  replace(from: number, to: number, chunks: number): void;
}

export interface RechunkResult {
  bytesRead: number;
  chunks: number;
}

function offset(v: number, name: string): number {
  if (!Number.isSafeInteger(v) || v < 0) throw invalidArgument(`${name} must be a safe non-negative integer, got ${String(v)}`, { argument: name });
  return v;
}

/**
 * One plan buffer for every map of this thread: a file's map is one of ~170,000 in a daemon
 * serving a whole-tree change, where a buffer each cost 1 KiB per file. Taken while a read's
 * visits run (a visit that plans another read gets a buffer of its own).
 */
let sharedPlan: Float64Array | null = new Float64Array(3 * 40);

/**
 * The page map of one file's content over its stored base (base size 0: no base). The two
 * states nearly every file is in are kept here without a native map: the stored base and nothing
 * dirty (a file looked up or committed), or no base at all (a file written whole). A native map
 * is made at the first write over a base or partial truncate of one, and dropped at rebase.
 */
export class CowPages {
  #p: RawCowPages | null = null;
  /** Without a native map: the base size (0: none) and the content's size (equal when there is a base). */
  #base: number;
  #size: number;

  constructor(baseSize = 0) {
    offset(baseSize, 'baseSize');
    this.#base = baseSize;
    this.#size = baseSize;
  }

  #native(): RawCowPages {
    if (this.#p) return this.#p;
    const p = callNative(() => new native.CowPages(this.#base));
    if (this.#base === 0 && this.#size > 0) p.commitWrite(0, this.#size);
    this.#p = p;
    return p;
  }

  get size(): number {
    return this.#p ? this.#p.size : this.#size;
  }

  /** Bytes of the base that still show through where no page is dirty (a prefix). */
  get validBase(): number {
    return this.#p ? this.#p.validBase : this.#base;
  }

  /** Pages copied-on-write since the last rebase. */
  get dirtyPages(): number {
    return this.#p ? this.#p.dirtyPages : 0;
  }

  /**
   * A write of [pos, pos + len): null when it is recorded already; otherwise the stored ranges
   * to copy into the spool first, after which commitWrite(pos, len) records it.
   */
  write(pos: number, len: number): CowCopy[] | null {
    if (pos + len > Number.MAX_SAFE_INTEGER) offset(pos + len, 'pos + len');
    offset(pos, 'pos');
    offset(len, 'len');
    if (!this.#p && this.#base === 0) {
      // No base: nothing to copy, the content just grows.
      if (len > 0) this.#size = Math.max(this.#size, pos + len);
      return null;
    }
    const r = this.#native().write(pos, len);
    if (r === null) return null;
    const out: CowCopy[] = [];
    for (let i = 0; i < r.length; i += 2) out.push({ start: r[i]!, len: r[i + 1]! });
    return out;
  }

  commitWrite(pos: number, len: number): void {
    offset(pos, 'pos');
    offset(len, 'len');
    if (!this.#p && this.#base === 0) {
      if (len > 0) this.#size = Math.max(this.#size, pos + len);
      return;
    }
    this.#native().commitWrite(pos, len);
  }

  /** Calls visit for each segment of [pos, min(pos + len, size)), in order. */
  read(pos: number, len: number, visit: (source: CowSource, pos: number, len: number) => void): void {
    offset(pos, 'pos');
    offset(len, 'len');
    if (!this.#p) {
      if (pos >= this.#size || len === 0) return;
      visit(this.#base > 0 ? CowSource.Base : CowSource.Spool, pos, Math.min(len, this.#size - pos));
      return;
    }
    let plan = sharedPlan ?? new Float64Array(3 * 40);
    sharedPlan = null;
    try {
      let n = this.#p.planRead(pos, len, plan);
      if (n * 3 > plan.length) {
        plan = new Float64Array(n * 3);
        n = this.#p.planRead(pos, len, plan);
      }
      for (let i = 0; i < n * 3; i += 3) visit(plan[i]! as CowSource, plan[i + 1]!, plan[i + 2]!);
    } finally {
      // A plan grown for a scattered file is not kept: it would stay for the thread's life.
      if (plan.length === 3 * 40) sharedPlan = plan;
    }
  }

  /** The segments of a read, as a list. */
  planRead(pos: number, len: number): CowSegment[] {
    const out: CowSegment[] = [];
    this.read(pos, len, (source, p, l) => out.push({ source, pos: p, len: l }));
    return out;
  }

  truncate(size: number): void {
    offset(size, 'size');
    if (size === 0) {
      // Truncated to nothing: no base, nothing dirty (as the native map would have it).
      this.#p = null;
      this.#base = this.#size = 0;
    } else if (this.#p) this.#p.truncate(size);
    else if (this.#base === 0) this.#size = size;
    else if (size !== this.#size) this.#native().truncate(size);
  }

  /** The content was stored: `size` bytes of base, nothing dirty. */
  rebase(size: number): void {
    offset(size, 'size');
    this.#p = null;
    this.#base = this.#size = size;
  }

  /** Changed ranges [begin, end) against a stored extent tree (end Infinity: to the end). */
  changedRanges(baseIsExtents: boolean): [number, number][] {
    const r = this.#native().changedRanges(baseIsExtents);
    const out: [number, number][] = [];
    for (let i = 0; i < r.length; i += 2) out.push([r[i]!, r[i + 1]!]);
    return out;
  }

  /**
   * Re-chunks what changed against the stored extent tree (or the whole content when the base is
   * not one); the result equals chunking the whole content. Errors thrown by io propagate as they are.
   */
  rechunk(baseIsExtents: boolean, io: RechunkIo, opts: { params?: ChunkerParams; piece?: number } = {}): RechunkResult {
    const params = resolveParams(opts.params);
    const piece = offset(opts.piece ?? 64 * 1024, 'piece');
    if (piece === 0 || piece > 64 * 1024 * 1024) throw invalidArgument(`piece must be 1..64 MiB, got ${piece}`, { argument: 'piece' });
    return this.#native().rechunk(params, baseIsExtents, piece, {
      chunkStart: (x) => io.chunkStart(x),
      read: (pos, len, dst) => io.read(pos, len, dst),
      emit: (bytes, table, ids) => {
        for (let i = 0, k = 0; k < table.length; i++, k += 3) {
          const start = table[k + 1]!;
          io.emit(table[k]!, bytes.subarray(start, start + table[k + 2]!), ids.subarray(i * 32, i * 32 + 32));
        }
      },
      replace: (from, to, chunks) => io.replace(from, to, chunks),
    });
  }
}
