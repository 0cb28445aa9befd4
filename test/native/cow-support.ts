/**
 * A caller of the native copy-on-write core for tests: a stored base (bytes and their chunk
 * list), a spool that keeps written bytes at their offsets, and the commit step that applies the
 * re-chunk's replacements to the chunk list. The spool and base are plain Buffers, so every byte
 * the core routes can be checked against a plain model of the file.
 */
import { chunkLengths, CowPages, CowSource, DOMAIN, objectId, type ChunkerParams } from '../../lib/native/index.js';

export interface Replaced {
  from: number;
  to: number;
  lengths: number[];
}

export class CowFile {
  base: Buffer;
  /** Old chunk lengths of the base. */
  chunks: number[];
  spool = Buffer.alloc(0);
  readonly pages: CowPages;

  constructor(
    base: Buffer,
    readonly params?: ChunkerParams,
  ) {
    this.base = base;
    this.chunks = chunkLengths(base, params);
    this.pages = new CowPages(base.length);
  }

  private spoolWrite(src: Buffer, pos: number): void {
    if (pos + src.length > this.spool.length) this.spool = Buffer.concat([this.spool, Buffer.alloc(pos + src.length - this.spool.length)]);
    src.copy(this.spool, pos);
  }

  write(src: Buffer, pos: number): void {
    if (src.length === 0) return;
    const copies = this.pages.write(pos, src.length);
    if (copies) {
      for (const c of copies) this.spoolWrite(this.base.subarray(c.start, c.start + c.len), c.start);
      this.pages.commitWrite(pos, src.length);
    }
    this.spoolWrite(src, pos);
  }

  truncate(size: number): void {
    if (size === this.pages.size) return;
    if (size === 0) this.base = Buffer.alloc(0);
    if (size < this.pages.size) this.spool = Buffer.from(this.spool.subarray(0, Math.min(size, this.spool.length)));
    this.pages.truncate(size);
  }

  read(pos: number, len: number): Buffer {
    const n = Math.max(0, Math.min(len, this.pages.size - pos));
    const out = Buffer.alloc(n);
    this.readInto(pos, n, out);
    return out;
  }

  readInto(pos: number, len: number, dst: Buffer): void {
    let covered = 0;
    this.pages.read(pos, len, (source, p, l) => {
      if (p !== pos + covered) throw new Error(`segment at ${p}, expected ${pos + covered}`);
      covered += l;
      const o = p - pos;
      if (source === CowSource.Base) {
        if (p + l > this.base.length) throw new Error(`base segment [${p}, ${p + l}) past the base's ${this.base.length} bytes`);
        this.base.copy(dst, o, p, p + l);
      } else if (source === CowSource.Spool) {
        dst.fill(0, o, o + l);
        if (p < this.spool.length) this.spool.copy(dst, o, p, Math.min(p + l, this.spool.length));
      } else dst.fill(0, o, o + l);
    });
    if (covered !== Math.max(0, Math.min(len, this.pages.size - pos))) throw new Error(`segments cover ${covered} of ${len} bytes`);
  }

  /** Re-chunks and stores: returns the replacements (or the whole list) and makes the content the base. */
  commit(piece?: number): { replaced: Replaced[]; whole: number[] | null; bytesRead: number; chunks: number } {
    const size = this.pages.size;
    // Truncation to zero drops the stored base: then everything is chunked anew.
    const hasBase = this.base.length > 0;
    const starts: number[] = [];
    let x = 0;
    for (const l of this.chunks) {
      starts.push(x);
      x += l;
    }
    const chunkStart = (off: number): number => {
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid]! <= off) lo = mid;
        else hi = mid - 1;
      }
      return starts[lo]!;
    };
    const replaced: Replaced[] = [];
    const whole: number[] = [];
    let run: number[] = [];
    let expectOffset = -1;
    const r = this.pages.rechunk(
      hasBase,
      {
        chunkStart,
        read: (pos, len, dst) => this.readInto(pos, len, dst),
        emit: (offset, bytes, id) => {
          if (expectOffset >= 0 && offset !== expectOffset && run.length > 0) throw new Error(`chunk at ${offset}, expected ${expectOffset}`);
          expectOffset = offset + bytes.length;
          if (!bytes.equals(this.read(offset, bytes.length))) throw new Error(`chunk at ${offset} does not hold the file's bytes`);
          if (!id.equals(objectId(DOMAIN.chunk, bytes))) throw new Error(`chunk at ${offset}: its id is not the chunk's`);
          (hasBase ? run : whole).push(bytes.length);
        },
        replace: (from, to, chunks) => {
          if (chunks !== run.length) throw new Error(`replace of ${chunks} chunks, ${run.length} emitted`);
          replaced.push({ from, to, lengths: run });
          run = [];
          expectOffset = -1;
        },
      },
      { params: this.params, ...(piece ? { piece } : {}) },
    );
    let list: number[];
    if (hasBase) {
      list = [];
      let at = 0;
      let i = 0;
      for (const rep of replaced) {
        while (at < rep.from) {
          list.push(this.chunks[i]!);
          at += this.chunks[i++]!;
        }
        if (at !== rep.from) throw new Error(`replacement starts at ${rep.from}, not an old cut`);
        while (at < rep.to) at += this.chunks[i++]!;
        if (at !== rep.to) throw new Error(`replacement ends at ${rep.to}, not an old cut`);
        list.push(...rep.lengths);
      }
      list.push(...this.chunks.slice(i));
    } else list = whole;
    const content = this.read(0, size);
    this.base = content;
    this.chunks = list;
    this.spool = Buffer.alloc(0);
    this.pages.rebase(content.length);
    return { replaced, whole: hasBase ? null : whole, bytesRead: r.bytesRead, chunks: r.chunks };
  }
}
