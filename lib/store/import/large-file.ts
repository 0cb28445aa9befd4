/**
 * A large file's content as chunk objects under an extent tree, never holding the file whole.
 * `storeLargeFile` is the import's path: the addon reads, cuts and hashes pieces on its thread
 * pool a few pieces ahead (readChunks) while this thread writes each piece's new chunks as a pack
 * row, so hashing overlaps the SQLite writes. The extent tree is built as the chunks arrive.
 * While a file streams, a process that fixed glibc's mmap threshold raises it (mallocStreamHeap).
 */
import { closeSync, fstatSync, openSync, readSync, constants as fsc } from 'node:fs';
import { Chunker } from '../../native/chunker.js';
import { mallocStreamHeap } from '../../native/info.js';
import { readChunks, type ChunkPiece, type ChunkStream, type FileIdentity } from '../../native/stream.js';
import { LayerFsError } from '../../errors.js';
import { idOf, ObjectKind, type ObjectWriter } from '../objects.js';
import { CHUNK_PACK_TARGET } from '../schema.js';
import { ExtentTreeBuilder } from '../tree/extents.js';

/** Pieces hashed ahead of the writer: enough to ride out a slow SQLite write, few enough to stay small. */
const READ_AHEAD = 3;

/**
 * Stores the file at `path`, which must still be the file a scan described (`expect`: same
 * dev/ino, size and times, else ERR_FILE_CHANGED), and returns its extent tree root. A file that
 * changes while read fails with ERR_FILE_CHANGED after its pieces were written: the caller's
 * transaction must then roll back.
 */
export async function storeLargeFile(path: Buffer, expect: FileIdentity, w: ObjectWriter, clock?: { waitMs: number }): Promise<Buffer> {
  // Each piece becomes one pack row when its chunks are new: pieces are sized as chunk rows.
  const stream = readChunks(path, { expect, pieceSize: CHUNK_PACK_TARGET, readAhead: READ_AHEAD });
  const tree = new ExtentTreeBuilder((node) => w.add(ObjectKind.Extents, node));
  const heap = mallocStreamHeap(true);
  try {
    for (;;) {
      const t = performance.now();
      const piece = await stream.next();
      if (clock) clock.waitMs += performance.now() - t;
      if (!piece) break;
      storePiece(stream, piece, w, tree);
    }
  } finally {
    stream.close();
    if (heap) mallocStreamHeap(false);
  }
  return tree.finish();
}

/**
 * storeLargeFile for a thread that cannot await (a mount's serving thread): the addon's threads
 * still read, cut and hash pieces ahead, and this thread waits for each where it is. `pause`
 * runs between pieces (a commit answers read-only requests there).
 */
export function storeLargeFileAhead(path: Buffer, expect: FileIdentity, w: Pick<ObjectWriter, 'putChunks'>, save: (node: Buffer) => Buffer, pause?: () => void): Buffer {
  const stream = readChunks(path, { expect, pieceSize: CHUNK_PACK_TARGET, readAhead: READ_AHEAD });
  const tree = new ExtentTreeBuilder(save);
  const heap = mallocStreamHeap(true);
  try {
    for (let piece = stream.take(); piece; piece = stream.take()) {
      storePiece(stream, piece, w, tree);
      pause?.();
    }
  } finally {
    stream.close();
    if (heap) mallocStreamHeap(false);
  }
  return tree.finish();
}

function storePiece(stream: ChunkStream, piece: ChunkPiece, w: Pick<ObjectWriter, 'putChunks'>, tree: ExtentTreeBuilder): void {
  w.putChunks(piece.data, piece.lengths, piece.ids);
  for (let i = 0; i < piece.lengths.length; i++) tree.push(piece.ids.subarray(i * 32, i * 32 + 32), piece.lengths[i]!);
  // The bytes are in SQLite now; the block goes back to the reader at once.
  stream.release(piece);
}

const SYNC_PIECE = 4 * 1024 * 1024;

function changed(display: string): LayerFsError {
  return new LayerFsError('ERR_FILE_CHANGED', `${display} changed while it was read`, { path: display, hint: 'retry when the file is quiet' });
}

/**
 * Synchronous reads for callers that cannot await: opens `path` (not following a symlink),
 * checks it is the `expect`ed file, passes the fd to `read` and checks nothing moved meanwhile.
 */
function readExpected<T>(path: Buffer, expect: FileIdentity, read: (fd: number) => { result: T; bytes: number }): T {
  const display = path.toString();
  let fd: number;
  try {
    fd = openSync(path, fsc.O_RDONLY | fsc.O_NOFOLLOW);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOENT') throw changed(display);
    throw new LayerFsError('ERR_NATIVE_IO', `cannot open ${display}: ${code}`, { path: display, errno: code });
  }
  try {
    const before = fstatSync(fd, { bigint: true });
    if (before.dev !== expect.dev || before.ino !== expect.ino || before.size !== BigInt(expect.size) || before.mtimeNs !== expect.mtimeNs || before.ctimeNs !== expect.ctimeNs) throw changed(display);
    const { result, bytes } = read(fd);
    const after = fstatSync(fd, { bigint: true });
    if (bytes !== expect.size || after.size !== before.size || after.mtimeNs !== before.mtimeNs || after.ctimeNs !== before.ctimeNs) throw changed(display);
    return result;
  } finally {
    closeSync(fd);
  }
}

/** A small file's bytes, read whole on the calling thread. */
export function readSmallFileSync(path: Buffer, expect: FileIdentity): Buffer {
  return readExpected(path, expect, (fd) => {
    // One byte more than expected: a file that grew is seen as a short-count mismatch.
    const buf = Buffer.allocUnsafe(expect.size + 1);
    let n = 0;
    for (let r; n < buf.length && (r = readSync(fd, buf, n, buf.length - n, n)) > 0; ) n += r;
    return { result: buf.subarray(0, n), bytes: n };
  });
}

/**
 * storeLargeFile on the calling thread: slower (no overlap, one hash call per chunk) but equally
 * bounded in memory.
 */
export function storeLargeFileSync(path: Buffer, expect: FileIdentity, w: Pick<ObjectWriter, 'putChunks'>, save: (node: Buffer) => Buffer): Buffer {
  return readExpected(path, expect, (fd) => {
    const chunker = new Chunker();
    const tree = new ExtentTreeBuilder(save);
    // Bytes of the chunk not cut yet (less than one maximum chunk) stay at the front.
    const buf = Buffer.allocUnsafe(SYNC_PIECE + 64 * 1024);
    let carry = 0;
    let total = 0;
    const emit = (lengths: number[], end: number): void => {
      if (lengths.length === 0) return;
      const ids = Buffer.allocUnsafe(lengths.length * 32);
      let off = 0;
      lengths.forEach((len, i) => {
        idOf(ObjectKind.Chunk, buf.subarray(off, off + len)).copy(ids, i * 32);
        off += len;
      });
      w.putChunks(buf.subarray(0, off), lengths, ids);
      lengths.forEach((len, i) => tree.push(ids.subarray(i * 32, i * 32 + 32), len));
      buf.copy(buf, 0, off, end);
      carry = end - off;
    };
    for (;;) {
      const n = readSync(fd, buf, carry, SYNC_PIECE, total);
      if (n === 0) break;
      total += n;
      emit(chunker.push(buf.subarray(carry, carry + n)), carry + n);
    }
    emit(chunker.finish(), carry);
    return { result: tree.finish(), bytes: total };
  });
}
