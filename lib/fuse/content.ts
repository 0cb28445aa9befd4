/**
 * File content of a live overlay: stored content read by offset through a bounded chunk cache,
 * private spool files for what was written, copy-on-write pages over stored content, and the
 * commit-time re-chunking that rewrites only the neighbourhood of what changed.
 *
 * A file's bytes at offset o (o < size):
 *   - no stored base (new file, or truncated to 0): the spool file at o (holes read as zeros);
 *   - page ⌊o/PAGE⌋ dirty: the spool file at o (the page was copied there on its first write);
 *   - o < validBase: the stored content at o;
 *   - otherwise zero (the file was truncated below o and extended again).
 * The spool keeps every byte at its own offset, so nothing is ever copied except the edge pages
 * of a write that does not cover them whole. It starts in memory (a sparse map of pages: most
 * files a tool writes are small, and creating a file on disk for each would cost as much as the
 * write itself) and moves to a sparse file under the spool directory once the file holds more
 * than SPILL_FILE bytes there or the overlay's memory budget is used up.
 */
import { statSync } from 'node:fs';
import { LRUCache } from 'lru-cache';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { CowPages, CowSource } from '../native/cow.js';
import { chunkDeltaSource, ContentForm, DELTA_MAX_BASES, ObjectKind, SMALL_FILE_THRESHOLD, type ChunkDeltaSource, type Inode, type ObjectReader, type ObjectWriter } from '../store/index.js';
import { buildExtentTree, type Extent } from '../store/tree/extents.js';
import { chunkAt, ExtentNodes, FreshNodes, replaceExtents, type Replacement } from './extents.js';
import { MemSpool, PAGE, SPILL_FILE, Spool, type MemoryBudget, type SpoolFactory, type SpoolLike } from './spool.js';

/** Bytes fed to the chunker per read while re-chunking (a few average chunks). */
const PIECE = 64 * 1024;
/** Spool segments in one read from which the spool is read once over their span. */
const SPAN_READ_SEGMENTS = 4;

export interface StoredContent {
  form: ContentForm;
  /** Blob id (Whole) or extent-tree root (Extents); null for an empty file. */
  id: Buffer | null;
  size: number;
}

export interface CacheLimits {
  /** Bytes of verified chunks and blobs kept (default 64 MiB). */
  chunkBytes?: number;
  /** Decoded extent-tree nodes kept (default 4096 ≈ 4 GiB of file content). */
  extentNodes?: number;
}

/**
 * Reads of stored content for every overlay of a Store: authenticated object reads (each
 * object re-hashed once when it enters the cache); extent trees are descended by offset, so
 * reading or editing a piece of a large file loads only the nodes on the way.
 */
export class ContentCache {
  private readonly chunks: LRUCache<string, Buffer>;
  readonly nodes: ExtentNodes;

  constructor(
    readonly objects: ObjectReader,
    limits: CacheLimits = {},
  ) {
    // Cost-bounded: an object larger than the whole budget is read but not kept.
    this.chunks = new LRUCache<string, Buffer>({ maxSize: limits.chunkBytes ?? 64 * 1024 * 1024, sizeCalculation: (b) => b.length + 64 });
    this.nodes = new ExtentNodes(objects, limits.extentNodes ?? 4096);
  }

  object(id: Buffer, kind: ObjectKind): Buffer {
    const key = id.toString('latin1');
    const hit = this.chunks.get(key);
    if (hit) return hit;
    const data = this.objects.get(id, kind);
    this.chunks.set(key, data);
    return data;
  }

  /** Every chunk id of a large file's content, in order (walks the whole extent tree). */
  chunkIds(c: StoredContent): Buffer[] {
    const out: Buffer[] = [];
    for (let x = 0; x < c.size; ) {
      const ch = chunkAt(this.nodes, c.id!, x);
      out.push(ch.id);
      x = ch.start + ch.length;
    }
    return out;
  }

  /** Copies stored bytes [pos, pos + len) into dst at dstOff; the range must lie inside the content. */
  read(c: StoredContent, pos: number, len: number, dst: Buffer, dstOff: number): void {
    if (len <= 0) return;
    if (pos + len > c.size) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'read past the stored content');
    if (c.form === ContentForm.Whole) {
      const blob = this.object(c.id!, ObjectKind.Blob);
      if (blob.length !== c.size) throw new LayerFsError('ERR_CORRUPT', `blob ${toHex(c.id!)} has ${blob.length} bytes where ${c.size} are recorded`, { id: toHex(c.id!), hint: 'the Store is damaged or forged; run layerfs verify' });
      blob.copy(dst, dstOff, pos, pos + len);
      return;
    }
    let p = pos;
    let o = dstOff;
    const end = pos + len;
    while (p < end) {
      const ch = chunkAt(this.nodes, c.id!, p);
      const data = this.object(ch.id, ObjectKind.Chunk);
      if (data.length !== ch.length) throw new LayerFsError('ERR_CORRUPT', `chunk ${toHex(ch.id)} has ${data.length} bytes, its extent says ${ch.length}`);
      const from = p - ch.start;
      const n = Math.min(data.length - from, end - p);
      data.copy(dst, o, from, from + n);
      p += n;
      o += n;
    }
  }
}

/** Statistics of one commit-time content build. */
export interface ContentBuild {
  /** Bytes read (stored or spooled) to chunk and hash. */
  bytesRead: number;
  /** Chunks produced by the chunker (the rest of the extent list was reused). */
  chunksHashed: number;
}

/** What every file of an overlay shares (one reference per file, not three). */
export interface FileContext {
  /** The read cache of stored content. */
  cache: ContentCache;
  newSpool: SpoolFactory;
  /** In-memory spools' budget. */
  budget: MemoryBudget;
}

/** Edits of any file of this thread so far: an edit's number is never reused, not even after a rebase. */
let edits = 0;

/** The content of one regular file in an overlay. */
export class FileData {
  base: StoredContent | null;
  /** The number of the last edit of this content (write, truncate, rebase): content stored ahead of a commit is used only while this is unchanged. */
  edit = ++edits;
  private spool: SpoolLike | null = null;
  /** Pages copied into the spool and what of the base still shows (native/cow.h). */
  private readonly pages: CowPages;
  /** True when the content differs (possibly) from `base`. */
  changed = false;

  constructor(
    base: StoredContent | null,
    private readonly ctx: FileContext,
  ) {
    this.base = base && base.size > 0 ? base : null;
    this.pages = new CowPages(this.base ? this.base.size : 0);
  }

  get size(): number {
    return this.pages.size;
  }

  /** Bytes of `base` that still show through where no page is dirty (a prefix). */
  get validBase(): number {
    return this.pages.validBase;
  }

  /**
   * The spool file that holds this content whole (no stored byte shows through, and the file is
   * exactly as long as the content, so its holes are the content's zeros), or null: the kernel
   * may then read that file itself (FUSE passthrough, kernel-passthrough.ts).
   */
  get wholeSpool(): string | null {
    if (!(this.spool instanceof Spool) || this.size === 0 || this.pages.validBase > 0) return null;
    try {
      this.spool.settle();
      return statSync(this.spool.path).size === this.size ? this.spool.path : null;
    } catch {
      return null;
    }
  }

  /**
   * The spool file that holds every byte of the changed content (no stored byte shows through),
   * or null: a commit may then read, chunk and hash that file on the addon's threads like an
   * import reads a file (commit-content.ts). The file may be shorter than the content (a
   * truncate that extended it); the reader checks the size it finds.
   */
  get spooledWhole(): string | null {
    if (!this.changed || !(this.spool instanceof Spool) || this.pages.validBase > 0 || this.pages.size === 0) return null;
    this.spool.settle(); // its writes are written behind (spool.ts): the reader must see them all
    return this.spool.path;
  }

  /**
   * Waits until every write of this file reached its spool file (spool.ts: writes are written
   * behind); throws the FsError of a write that failed (sticky until truncated to 0).
   */
  settle(): void {
    if (this.spool instanceof Spool) this.spool.settle();
  }

  /** Before a commit stores this content: a typed error (naming `path()`) when a write of it was lost. */
  check(path: () => string): void {
    if (this.changed && this.spool instanceof Spool) this.spool.check(path);
  }

  /** Nothing written since the base, no spool: the content is the base's. */
  get idle(): boolean {
    return !this.changed && this.spool === null;
  }

  /** Pages copied from stored content (a measure of copy-on-write work). */
  get dirtyPages(): number {
    return this.pages.dirtyPages;
  }

  private ensureSpool(): SpoolLike {
    if (!this.spool) this.spool = this.ctx.budget.limit > 0 ? new MemSpool(this.ctx.budget) : this.ctx.newSpool();
    return this.spool;
  }

  /** Moves an in-memory spool that grew too big (or exhausted the budget) to a file. */
  private maybeSpill(): void {
    const mem = this.spool;
    if (!(mem instanceof MemSpool) || (mem.bytes <= SPILL_FILE && this.ctx.budget.used <= this.ctx.budget.limit)) return;
    const file = this.ctx.newSpool();
    // Only the content's bytes: a page past the end would leave the file longer than the content.
    const size = this.pages.size;
    for (const [page, data] of mem.pages) {
      const n = Math.min(PAGE, size - page * PAGE);
      if (n > 0) file.write(n === PAGE ? data : data.subarray(0, n), page * PAGE);
    }
    mem.close();
    this.spool = file;
  }

  /** Reads up to len bytes at pos into dst; returns the count (0 at or past the end). */
  read(pos: number, len: number, dst: Buffer, dstOff = 0): number {
    const size = this.pages.size;
    if (pos >= size || len <= 0) return 0;
    const n = Math.min(len, size - pos);
    const segments: number[] = [];
    let spooled = 0;
    this.pages.read(pos, n, (source, p, l) => {
      segments.push(source, p, l);
      if (source === CowSource.Spool) spooled++;
    });
    // Scattered dirty pages: one spool read over their whole span (its other bytes are then
    // overwritten below) costs less than a read per page.
    let spanFrom = Infinity;
    let spanTo = -1;
    if (spooled >= SPAN_READ_SEGMENTS && this.spool) {
      for (let i = 0; i < segments.length; i += 3) {
        if (segments[i] !== CowSource.Spool) continue;
        spanFrom = Math.min(spanFrom, segments[i + 1]!);
        spanTo = segments[i + 1]! + segments[i + 2]!;
      }
      this.spool.read(dst, dstOff + (spanFrom - pos), spanTo - spanFrom, spanFrom);
    }
    for (let i = 0; i < segments.length; i += 3) {
      const source = segments[i] as CowSource;
      const p = segments[i + 1]!;
      const l = segments[i + 2]!;
      const o = dstOff + (p - pos);
      if (source === CowSource.Base) this.ctx.cache.read(this.base!, p, l, dst, o);
      else if (source === CowSource.Spool && this.spool) {
        if (p < spanFrom || p >= spanTo) this.spool.read(dst, o, l, p);
      } else dst.fill(0, o, o + l);
    }
    return n;
  }

  write(src: Buffer, pos: number): void {
    if (src.length === 0) return;
    const spool = this.ensureSpool();
    const copies = this.pages.write(pos, src.length);
    if (copies) {
      // Edge pages the write covers in part: their stored bytes go to the spool first.
      for (const c of copies) {
        const buf = Buffer.allocUnsafe(c.len);
        this.ctx.cache.read(this.base!, c.start, c.len, buf, 0);
        spool.write(buf, c.start);
      }
      this.pages.commitWrite(pos, src.length);
    }
    spool.write(src, pos);
    this.changed = true;
    this.edit = ++edits;
    this.maybeSpill();
  }

  truncate(size: number): void {
    if (size === this.size) return;
    if (size === 0) {
      this.base = null;
      this.spool?.truncate(0);
    } else if (size < this.size) {
      this.spool?.truncate(size);
    }
    this.pages.truncate(size);
    this.changed = true;
    this.edit = ++edits;
  }

  /**
   * True when the next store() edits the stored extent tree in place, offering each new chunk
   * the old chunk at its offset as a delta base while it writes it.
   */
  get offersDeltaBases(): boolean {
    return this.changed && this.size >= SMALL_FILE_THRESHOLD && this.base?.form === ContentForm.Extents;
  }

  /** The content to record at commit: unchanged content is reused, changed content stored. */
  /** `pause`: called after each new chunk of a large file (a commit answers read-only requests there, overlay-commit.ts). */
  store(w: ObjectWriter, stats: ContentBuild, predecessor?: Inode, pause?: () => void): StoredContent {
    if (!this.changed) return this.base ?? { form: ContentForm.None, id: null, size: 0 };
    const size = this.size;
    if (size === 0) return { form: ContentForm.None, id: null, size: 0 };
    if (size < SMALL_FILE_THRESHOLD) {
      // Not from Buffer's shared pool: a slice of it there kept the whole pool alive as long as a
      // small Buffer allocated next to it (the ids a commit keeps), 8 KiB per file over a large commit.
      const bytes = Buffer.allocUnsafeSlow(size);
      this.read(0, size, bytes);
      stats.bytesRead += size;
      const id = w.add(ObjectKind.Blob, bytes);
      // A file that replaced a stored one: the new blob is still the newest of its group.
      if (predecessor?.form === ContentForm.Whole && predecessor.content) w.suggestBase(id, predecessor.content);
      return { form: ContentForm.Whole, id, size };
    }
    const base = this.base && this.base.form === ContentForm.Extents ? this.base : null;
    const plan = this.rechunk(w, stats, base ? undefined : chunkDeltaSource(predecessor, size, (id) => w.read(id)), pause);
    if (!base || plan.whole) {
      return { form: ContentForm.Extents, id: buildExtentTree(plan.whole ?? [], (node) => w.add(ObjectKind.Extents, node)), size };
    }
    // Edit the old tree in place: only nodes whose entries change are rewritten.
    const src = new FreshNodes(this.ctx.cache.nodes);
    let root = base.id!;
    let treeSize = base.size;
    for (const r of plan.replacements) {
      root = replaceExtents(src, root, treeSize, r, (data, node) => {
        const id = w.add(ObjectKind.Extents, data);
        src.remember(id, node);
        return id;
      });
      treeSize += r.entries.reduce((a, e) => a + e.length, 0) - (r.to - r.from);
    }
    if (treeSize !== size) throw new LayerFsError('ERR_CORRUPT', `re-chunking produced ${treeSize} bytes for a file of ${size}`);
    return { form: ContentForm.Extents, id: root, size };
  }


  /**
   * What changed, as chunks (native/cow.h): content before the chunk preceding each change and
   * after the point where new cut points meet old ones again keeps its chunks; only the
   * neighbourhood of each changed range is read, chunked and hashed. The result equals chunking
   * the whole file. Returns the replaced runs of old chunks, or the whole chunk list when there is
   * no stored extent tree to edit.
   */
  rechunk(w: ObjectWriter, stats: ContentBuild, source?: ChunkDeltaSource, pause?: () => void): { whole: Extent[] | null; replacements: Replacement[] } {
    const base = this.base && this.base.form === ContentForm.Extents ? this.base : null;
    const oldSize = base ? base.size : 0;
    const nodes = this.ctx.cache.nodes;
    const at = (x: number) => chunkAt(nodes, base!.id!, x);
    const overlapped = (a: number, b: number): Buffer[] => {
      const ids: Buffer[] = [];
      for (let x = a; x < b && ids.length < DELTA_MAX_BASES; ) {
        const ch = at(x);
        ids.push(ch.id);
        x = ch.start + ch.length;
      }
      return ids;
    };
    const replacements: Replacement[] = [];
    const whole: Extent[] = [];
    let run: Extent[] = [];
    const r = this.pages.rechunk(
      base !== null,
      {
        chunkStart: (x) => at(x).start,
        read: (pos, len, dst) => {
          this.read(pos, len, dst);
        },
        emit: (cut, bytes, id) => {
          // The old chunks this piece overlaps are its delta bases (cuts take a few chunks to
          // meet old ones again, so a piece often straddles two). Offered now, while it is the
          // newest of its group: a later hint finds all but the last chunks sealed.
          const fresh = w.put(ObjectKind.Chunk, id, bytes);
          if (fresh && base && cut < oldSize) w.suggestBase(id, overlapped(cut, Math.min(cut + bytes.length, oldSize)));
          // A new file that replaced a stored large file: the old chunks at the same place.
          const bases = source?.next(id, bytes.length, fresh);
          if (bases && bases.length > 0) source!.result(w.suggestBase(id, bases));
          (base ? run : whole).push({ id, length: bytes.length });
          pause?.();
        },
        replace: (from, to, chunks) => {
          if (chunks !== run.length) throw new LayerFsError('ERR_CORRUPT', `re-chunking replaced ${chunks} chunks where ${run.length} were emitted`);
          replacements.push({ from, to, entries: run });
          run = [];
        },
      },
      { piece: PIECE },
    );
    stats.bytesRead += r.bytesRead;
    stats.chunksHashed += r.chunks;
    return { whole: base ? null : whole, replacements };
  }

  /** After a commit stored this content: it becomes the base and the spool goes. */
  rebase(stored: StoredContent): void {
    this.base = stored.size > 0 ? stored : null;
    this.pages.rebase(this.base ? stored.size : 0);
    this.changed = false;
    this.edit = ++edits;
    this.spool?.close();
    this.spool = null;
  }

  /** Frees the spool (the file is gone for good). */
  dispose(): void {
    this.spool?.close();
    this.spool = null;
  }
}
