/**
 * File content assembled from pieces of other files' content (a chunk-level merge), stored as it
 * arrives without holding the file: stored chunks are reused by id where the result's cut points
 * are theirs, and only bytes around new material go through the chunker again. The result is
 * exactly what an import of the same bytes stores (same chunks, same extent tree, a blob below
 * SMALL_FILE_THRESHOLD), so merged content deduplicates with everything else.
 *
 * Why reuse is exact: a FastCDC cut depends only on the bytes since the previous cut. So at a cut
 * of the result, a stored chunk that was cut by its own bytes (not by the end of its file) is
 * cut the same way again; after new bytes, the chunker runs until one of its cuts falls on a
 * piece boundary, and from there reuse is exact again.
 */
import { Chunker } from '../native/chunker.js';
import type { StoredContent } from './import/content.js';
import { storeBytes } from './import/content.js';
import { idOf, ObjectKind, type ObjectWriter } from './objects.js';
import { ExtentTreeBuilder } from './tree/extents.js';
import { ContentForm, SMALL_FILE_THRESHOLD } from './tree/inode.js';

export class ContentStream {
  private readonly tree: ExtentTreeBuilder;
  /** Bytes of the file's start while it may still turn out smaller than SMALL_FILE_THRESHOLD. */
  private head: Buffer[] | null = [];
  private headBytes = 0;
  /** Running when the bytes written so far do not end at a cut. */
  private chunker: Chunker | null = null;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private chunks = 0;
  /** Bytes written so far. */
  size = 0;

  constructor(private readonly w: ObjectWriter) {
    this.tree = new ExtentTreeBuilder((node) => w.add(ObjectKind.Extents, node));
  }

  /**
   * A stored chunk. `cutByEnd`: it was the last chunk of its file, so its end may not be a cut
   * of its own. `bytes` is called only when the chunk has to be chunked again.
   */
  chunk(id: Buffer, length: number, cutByEnd: boolean, bytes: () => Buffer): void {
    if (this.head || this.chunker || cutByEnd) return this.bytes(bytes());
    this.tree.push(id, length);
    this.chunks++;
    this.size += length;
  }

  /** New bytes. */
  bytes(data: Buffer): void {
    if (data.length === 0) return;
    this.size += data.length;
    if (this.head) {
      this.head.push(data);
      this.headBytes += data.length;
      if (this.headBytes < SMALL_FILE_THRESHOLD) return;
      data = Buffer.concat(this.head);
      this.head = null;
    }
    this.chunker ??= new Chunker();
    this.pending.push(data);
    this.pendingBytes += data.length;
    this.cut(this.chunker.push(data));
    if (this.pendingBytes === 0) this.chunker = null;
  }

  /** Stores the chunks just cut from the front of the pending bytes. */
  private cut(lengths: number[]): void {
    if (lengths.length === 0) return;
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
    const ids = Buffer.allocUnsafe(lengths.length * 32);
    let off = 0;
    lengths.forEach((len, i) => {
      idOf(ObjectKind.Chunk, all.subarray(off, off + len)).copy(ids, i * 32);
      off += len;
    });
    this.w.putChunks(all.subarray(0, off), lengths, ids);
    lengths.forEach((len, i) => this.tree.push(ids.subarray(i * 32, i * 32 + 32), len));
    this.chunks += lengths.length;
    // A copy, so the rest does not pin the whole concatenation.
    const rest = all.subarray(off);
    this.pending = rest.length > 0 ? [Buffer.from(rest)] : [];
    this.pendingBytes = rest.length;
  }

  /** The stored content. */
  finish(): StoredContent {
    if (this.head) return this.headBytes === 0 ? { form: ContentForm.None, content: null } : storeBytes(Buffer.concat(this.head), this.w);
    if (this.chunker) this.cut(this.chunker.finish());
    this.chunker = null;
    return { form: ContentForm.Extents, content: this.tree.finish() };
  }
}
