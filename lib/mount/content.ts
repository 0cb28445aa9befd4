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
import { closeSync, ftruncateSync, openSync, readSync, unlinkSync, writeSync, constants as fsc } from 'node:fs';
import { join } from 'node:path';
import { LayerFsError } from '../errors.js';
import { toHex } from '../format/hex.js';
import { Chunker } from '../native/index.js';
import { chunkDeltaSource, ContentForm, DELTA_MAX_BASES, idOf, ObjectKind, SMALL_FILE_THRESHOLD, type ChunkDeltaSource, type Inode, type ObjectReader, type ObjectWriter } from '../store/index.js';
import { buildExtentTree, type Extent } from '../store/tree/extents.js';
import { chunkAt, ExtentNodes, FreshNodes, replaceExtents, type Replacement } from './extents.js';

/** Copy-on-write granularity over stored content. */
export const PAGE = 4096;
/** Bytes fed to the chunker per read while re-chunking (a few average chunks). */
const PIECE = 64 * 1024;

export interface StoredContent {
  form: ContentForm;
  /** Blob id (Whole) or extent-tree root (Extents); null for an empty file. */
  id: Buffer | null;
  size: number;
}

class Lru<V> {
  private readonly map = new Map<string, { v: V; cost: number }>();
  private total = 0;

  constructor(private readonly budget: number) {}

  get(key: string): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    this.map.delete(key);
    this.map.set(key, hit);
    return hit.v;
  }

  set(key: string, v: V, cost: number): void {
    const old = this.map.get(key);
    if (old) {
      this.total -= old.cost;
      this.map.delete(key);
    }
    this.map.set(key, { v, cost });
    this.total += cost;
    while (this.total > this.budget && this.map.size > 1) {
      const [k, e] = this.map.entries().next().value as [string, { v: V; cost: number }];
      this.map.delete(k);
      this.total -= e.cost;
    }
  }
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
  private readonly chunks: Lru<Buffer>;
  readonly nodes: ExtentNodes;

  constructor(
    readonly objects: ObjectReader,
    limits: CacheLimits = {},
  ) {
    this.chunks = new Lru(limits.chunkBytes ?? 64 * 1024 * 1024);
    this.nodes = new ExtentNodes(objects, limits.extentNodes ?? 4096);
  }

  object(id: Buffer, kind: ObjectKind): Buffer {
    const key = id.toString('latin1');
    const hit = this.chunks.get(key);
    if (hit) return hit;
    const data = this.objects.get(id, kind);
    this.chunks.set(key, data, data.length + 64);
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

/** Bytes written, each at its own offset: in memory or in a file. Reads past what was written give zeros. */
export interface SpoolLike {
  read(dst: Buffer, off: number, len: number, pos: number): void;
  write(src: Buffer, pos: number): void;
  truncate(size: number): void;
  close(): void;
}

/** A file's spool moves to disk once it holds this much in memory. */
export const SPILL_FILE = 1 << 20;

/**
 * Memory all in-memory spools of one overlay may hold by default: 64 MiB, or
 * $LAYERFS_SPOOL_MEMORY_MIB. It bounds the daemon's resident size while a tool writes a large
 * change (the rest goes to spool files), so it stays well under the 256 MiB a daemon may use.
 */
export function spoolMemoryBudget(): number {
  const mib = Number(process.env.LAYERFS_SPOOL_MEMORY_MIB);
  return (Number.isFinite(mib) && mib >= 0 ? mib : 64) * 1024 * 1024;
}

/** Memory all in-memory spools of one overlay may hold together. */
export class MemoryBudget {
  used = 0;

  constructor(readonly limit = 256 * 1024 * 1024) {}
}

/** A sparse in-memory spool: 4 KiB pages by index. */
export class MemSpool implements SpoolLike {
  readonly pages = new Map<number, Buffer>();

  constructor(private readonly budget: MemoryBudget) {}

  get bytes(): number {
    return this.pages.size * PAGE;
  }

  read(dst: Buffer, off: number, len: number, pos: number): void {
    let p = pos;
    const end = pos + len;
    while (p < end) {
      const page = Math.floor(p / PAGE);
      const inPage = p - page * PAGE;
      const n = Math.min(PAGE - inPage, end - p);
      const data = this.pages.get(page);
      if (data) data.copy(dst, off + (p - pos), inPage, inPage + n);
      else dst.fill(0, off + (p - pos), off + (p - pos) + n);
      p += n;
    }
  }

  write(src: Buffer, pos: number): void {
    let p = pos;
    const end = pos + src.length;
    while (p < end) {
      const page = Math.floor(p / PAGE);
      const inPage = p - page * PAGE;
      const n = Math.min(PAGE - inPage, end - p);
      let data = this.pages.get(page);
      if (!data) {
        data = Buffer.alloc(PAGE);
        this.pages.set(page, data);
        this.budget.used += PAGE;
      }
      src.copy(data, inPage, p - pos, p - pos + n);
      p += n;
    }
  }

  truncate(size: number): void {
    const keep = Math.ceil(size / PAGE);
    for (const page of [...this.pages.keys()]) {
      if (page >= keep) {
        this.pages.delete(page);
        this.budget.used -= PAGE;
      }
    }
    const tail = this.pages.get(Math.floor(size / PAGE));
    if (tail) tail.fill(0, size % PAGE);
  }

  close(): void {
    this.budget.used -= this.pages.size * PAGE;
    this.pages.clear();
  }
}

/**
 * The open descriptors of disk spools, least recently used first. A Workspace may hold far more
 * dirty files than a process may open (rsync of a release over another dirties ~80,000), so a
 * spool keeps its bytes in its file and opens it only while in use: at most OPEN_SPOOLS stay open
 * per serving thread, and the least recently used is closed to make room.
 */
const OPEN_SPOOLS = 128;
const openSpools = new Map<Spool, number>();

function spoolFd(spool: Spool, flags: number): number {
  const fd = openSpools.get(spool);
  if (fd !== undefined) {
    openSpools.delete(spool);
    openSpools.set(spool, fd);
    return fd;
  }
  if (openSpools.size >= OPEN_SPOOLS) {
    const [oldest, oldFd] = openSpools.entries().next().value as [Spool, number];
    openSpools.delete(oldest);
    closeSync(oldFd);
  }
  const opened = openSync(spool.path, flags, 0o600);
  openSpools.set(spool, opened);
  return opened;
}

/** A private sparse file holding written bytes at their own offsets. Never inside a mount. */
export class Spool implements SpoolLike {
  private closed = false;

  constructor(readonly path: string) {
    // Created now, exclusively and without following links; reopened later without O_CREAT.
    spoolFd(this, fsc.O_RDWR | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW);
  }

  private get fd(): number {
    return spoolFd(this, fsc.O_RDWR | fsc.O_NOFOLLOW);
  }

  /** Fills dst[off, off + len) from the file at pos; bytes past its end read as zeros. */
  read(dst: Buffer, off: number, len: number, pos: number): void {
    let done = 0;
    while (done < len) {
      const n = readSync(this.fd, dst, off + done, len - done, pos + done);
      if (n === 0) break;
      done += n;
    }
    if (done < len) dst.fill(0, off + done, off + len);
  }

  write(src: Buffer, pos: number): void {
    let done = 0;
    while (done < src.length) done += writeSync(this.fd, src, done, src.length - done, pos + done);
  }

  truncate(size: number): void {
    ftruncateSync(this.fd, size);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    const fd = openSpools.get(this);
    if (fd !== undefined) {
      openSpools.delete(this);
      closeSync(fd);
    }
    try {
      unlinkSync(this.path);
    } catch {
      /* already gone */
    }
  }
}

/** How many spool descriptors this thread holds open (bounded by OPEN_SPOOLS). */
export function openSpoolCount(): number {
  return openSpools.size;
}

export interface SpoolFactory {
  (): Spool;
}

let spoolCounter = 0;

export function spoolFactory(dir: string): SpoolFactory {
  return () => new Spool(join(dir, `${process.pid}-${Date.now().toString(36)}-${(spoolCounter++).toString(36)}`));
}

/** Statistics of one commit-time content build. */
export interface ContentBuild {
  /** Bytes read (stored or spooled) to chunk and hash. */
  bytesRead: number;
  /** Chunks produced by the chunker (the rest of the extent list was reused). */
  chunksHashed: number;
}

/** The content of one regular file in an overlay. */
export class FileData {
  base: StoredContent | null;
  /** Bytes of `base` that still show through where no page is dirty (a prefix). */
  validBase: number;
  size: number;
  private spool: SpoolLike | null = null;
  /** Pages copied into the spool, when there is a base. */
  private dirty: Set<number> | null = null;
  /** True when the content differs (possibly) from `base`. */
  changed = false;

  constructor(
    base: StoredContent | null,
    private readonly cache: ContentCache,
    private readonly newSpool: SpoolFactory,
    private readonly budget: MemoryBudget = new MemoryBudget(0),
  ) {
    this.base = base && base.size > 0 ? base : null;
    this.size = base?.size ?? 0;
    this.validBase = this.base ? this.base.size : 0;
  }

  /** Pages copied from stored content (a measure of copy-on-write work). */
  get dirtyPages(): number {
    return this.dirty?.size ?? 0;
  }

  private ensureSpool(): SpoolLike {
    if (!this.spool) this.spool = this.budget.limit > 0 ? new MemSpool(this.budget) : this.newSpool();
    return this.spool;
  }

  /** Moves an in-memory spool that grew too big (or exhausted the budget) to a file. */
  private maybeSpill(): void {
    const mem = this.spool;
    if (!(mem instanceof MemSpool) || (mem.bytes <= SPILL_FILE && this.budget.used <= this.budget.limit)) return;
    const file = this.newSpool();
    for (const [page, data] of mem.pages) file.write(data, page * PAGE);
    mem.close();
    this.spool = file;
  }

  /** Stored bytes where valid, zeros beyond; [pos, pos + len) lies below size and outside dirty pages. */
  private readBase(pos: number, len: number, dst: Buffer, off: number): void {
    const fromBase = this.base ? Math.max(0, Math.min(len, this.validBase - pos)) : 0;
    if (fromBase > 0) this.cache.read(this.base!, pos, fromBase, dst, off);
    if (fromBase < len) dst.fill(0, off + fromBase, off + len);
  }

  /** Reads up to len bytes at pos into dst; returns the count (0 at or past the end). */
  read(pos: number, len: number, dst: Buffer, dstOff = 0): number {
    if (pos >= this.size || len <= 0) return 0;
    const n = Math.min(len, this.size - pos);
    if (!this.base) {
      if (this.spool) this.spool.read(dst, dstOff, n, pos);
      else dst.fill(0, dstOff, dstOff + n);
      return n;
    }
    const dirty = this.dirty;
    if (!dirty || dirty.size === 0) {
      this.readBase(pos, n, dst, dstOff);
      return n;
    }
    const end = pos + n;
    let p = pos;
    while (p < end) {
      const page = Math.floor(p / PAGE);
      const isDirty = dirty.has(page);
      let q = Math.min(end, (page + 1) * PAGE);
      while (q < end && dirty.has(Math.floor(q / PAGE)) === isDirty) q = Math.min(end, q + PAGE);
      if (isDirty) this.spool!.read(dst, dstOff + (p - pos), q - p, p);
      else this.readBase(p, q - p, dst, dstOff + (p - pos));
      p = q;
    }
    return n;
  }

  write(src: Buffer, pos: number): void {
    if (src.length === 0) return;
    const end = pos + src.length;
    const spool = this.ensureSpool();
    if (this.base) {
      const dirty = (this.dirty ??= new Set());
      const first = Math.floor(pos / PAGE);
      const last = Math.floor((end - 1) / PAGE);
      for (let page = first; page <= last; page++) {
        if (dirty.has(page)) continue;
        const start = page * PAGE;
        // A page the write covers whole needs no copy: its old bytes are all replaced.
        if (!(pos <= start && end >= start + PAGE)) {
          const have = Math.max(0, Math.min(PAGE, this.size - start));
          if (have > 0) {
            const buf = Buffer.alloc(have);
            this.readBase(start, have, buf, 0);
            spool.write(buf, start);
          }
        }
        dirty.add(page);
      }
    }
    spool.write(src, pos);
    if (end > this.size) this.size = end;
    this.changed = true;
    this.maybeSpill();
  }

  truncate(size: number): void {
    if (size === this.size) return;
    if (size === 0) {
      this.base = null;
      this.dirty = null;
      this.validBase = 0;
      this.spool?.truncate(0);
    } else if (size < this.size) {
      if (this.dirty) {
        const firstGone = Math.ceil(size / PAGE);
        for (const p of this.dirty) if (p >= firstGone) this.dirty.delete(p);
      }
      this.validBase = Math.min(this.validBase, size);
      this.spool?.truncate(size);
    }
    this.size = size;
    this.changed = true;
  }

  /**
   * True when the next store() edits the stored extent tree in place, offering each new chunk
   * the old chunk at its offset as a delta base while it writes it.
   */
  get offersDeltaBases(): boolean {
    return this.changed && this.size >= SMALL_FILE_THRESHOLD && this.base?.form === ContentForm.Extents;
  }

  /** The content to record at commit: unchanged content is reused, changed content stored. */
  store(w: ObjectWriter, stats: ContentBuild, predecessor?: Inode): StoredContent {
    if (!this.changed) return this.base ?? { form: ContentForm.None, id: null, size: 0 };
    const size = this.size;
    if (size === 0) return { form: ContentForm.None, id: null, size: 0 };
    if (size < SMALL_FILE_THRESHOLD) {
      const bytes = Buffer.allocUnsafe(size);
      this.read(0, size, bytes);
      stats.bytesRead += size;
      const id = w.add(ObjectKind.Blob, bytes);
      // A file that replaced a stored one: the new blob is still the newest of its group.
      if (predecessor?.form === ContentForm.Whole && predecessor.content) w.suggestBase(id, predecessor.content);
      return { form: ContentForm.Whole, id, size };
    }
    const base = this.base && this.base.form === ContentForm.Extents ? this.base : null;
    const plan = this.rechunk(w, stats, base ? undefined : chunkDeltaSource(predecessor, size, (id) => w.read(id)));
    if (!base || plan.whole) {
      return { form: ContentForm.Extents, id: buildExtentTree(plan.whole ?? [], (node) => w.add(ObjectKind.Extents, node)), size };
    }
    // Edit the old tree in place: only nodes whose entries change are rewritten.
    const src = new FreshNodes(this.cache.nodes);
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
   * What changed, as chunks. Content before the chunk preceding the first change and after the
   * point where new cut points meet old ones again keeps its chunks; only the neighbourhood of
   * each changed range is read, chunked and hashed. Edits never shift bytes (writes overwrite in
   * place, truncation and extension act at the end), so old and new bytes agree at equal offsets
   * outside the changed ranges, and the chunker, whose state resets at every cut, reproduces the
   * old cuts from any old cut onwards until the next change. The result equals chunking the
   * whole file. Returns the replaced runs of old chunks, or the whole chunk list when there is no
   * stored extent tree to edit.
   */
  rechunk(w: ObjectWriter, stats: ContentBuild, source?: ChunkDeltaSource): { whole: Extent[] | null; replacements: Replacement[] } {
    const S = this.size;
    const base = this.base && this.base.form === ContentForm.Extents ? this.base : null;
    const oldSize = base ? base.size : 0;
    const nodes = this.cache.nodes;
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
    // Changed ranges [a, b) in ascending order; b = Infinity for a change that runs to the end.
    const ranges: [number, number][] = [];
    if (!base) ranges.push([0, Infinity]);
    else {
      const pages = [...(this.dirty ?? [])].sort((x, y) => x - y);
      for (const p of pages) {
        const a = p * PAGE;
        if (a >= S) continue;
        const b = Math.min(a + PAGE, S);
        const last = ranges[ranges.length - 1];
        if (last && last[1] >= a) last[1] = Math.max(last[1], b);
        else ranges.push([a, b]);
      }
      const validBase = Math.min(this.validBase, oldSize);
      if (validBase < oldSize || S !== oldSize) {
        const t = Math.min(validBase, S, oldSize);
        while (ranges.length > 0 && ranges[ranges.length - 1]![0] >= t) ranges.pop();
        const last = ranges[ranges.length - 1];
        if (last && last[1] >= t) last[1] = Infinity;
        else ranges.push([t, Infinity]);
      }
    }
    const replacements: Replacement[] = [];
    const whole: Extent[] = [];
    // Old bytes from here on still stand where the last run re-synchronized (an old cut).
    let resynced = 0;
    let c = 0;
    while (c < ranges.length) {
      let start = 0;
      if (base) {
        const ch = at(Math.min(ranges[c]![0], oldSize - 1));
        const prev = ch.start > 0 ? at(ch.start - 1) : ch;
        start = Math.max(resynced, prev.start);
      }
      const out: Extent[] = base ? [] : whole;
      let pos = start;
      let cut = start;
      const chunker = new Chunker();
      let carry: Buffer = Buffer.alloc(0);
      let resync = -1;
      const emit = (len: number): void => {
        const bytes = carry.subarray(0, len);
        const id = idOf(ObjectKind.Chunk, bytes);
        // The old chunks this piece overlaps are its delta bases (cuts take a few chunks to meet
        // old ones again, so a piece often straddles two). Offered now, while it is the newest
        // of its group: a later hint finds all but the last chunks sealed.
        const fresh = w.put(ObjectKind.Chunk, id, bytes);
        if (fresh && base && cut < oldSize) w.suggestBase(id, overlapped(cut, Math.min(cut + len, oldSize)));
        // A new file that replaced a stored large file: the old chunks at the same place.
        const bases = source?.next(id, len, fresh);
        if (bases && bases.length > 0) source!.result(w.suggestBase(id, bases));
        out.push({ id, length: len });
        stats.chunksHashed++;
        carry = carry.subarray(len);
        cut += len;
      };
      stream: while (pos < S) {
        const len = Math.min(PIECE, S - pos);
        const piece = Buffer.allocUnsafe(len);
        this.read(pos, len, piece);
        stats.bytesRead += len;
        pos += len;
        carry = carry.length === 0 ? piece : Buffer.concat([carry, piece]);
        for (const l of chunker.push(piece)) {
          emit(l);
          while (c < ranges.length && ranges[c]![1] <= cut) c++;
          if (base && cut < oldSize && (c === ranges.length || ranges[c]![0] >= cut) && at(cut).start === cut) {
            resync = cut;
            break stream;
          }
        }
      }
      if (resync < 0) {
        for (const l of chunker.finish()) emit(l);
        if (base) replacements.push({ from: start, to: oldSize, entries: out });
        break;
      }
      replacements.push({ from: start, to: resync, entries: out });
      resynced = resync;
    }
    return { whole: base ? null : whole, replacements };
  }

  /** After a commit stored this content: it becomes the base and the spool goes. */
  rebase(stored: StoredContent): void {
    this.base = stored.size > 0 ? stored : null;
    this.size = stored.size;
    this.validBase = stored.size;
    this.dirty = null;
    this.changed = false;
    this.spool?.close();
    this.spool = null;
  }

  /** Frees the spool (the file is gone for good). */
  dispose(): void {
    this.spool?.close();
    this.spool = null;
    this.dirty = null;
  }
}
