/**
 * readChunks: one file read, cut and hashed on the thread pool a few pieces ahead of the caller,
 * so storing piece k overlaps reading and hashing piece k+1. Memory is a few pieces, whatever the
 * file size; cut points are exactly those of chunkLengths over the whole file.
 */
import { invalidArgument, LayerFsError } from '../errors.js';
import { native, type RawChunkStream } from './binding.js';
import { DEFAULT_CHUNKER_PARAMS, displayPath, optionalInt, resolveParams, toPathBuffer, type ChunkerParams } from './params.js';
import { fromNative } from './wrap.js';

/** Whole chunks of the file, back to back. */
export interface ChunkPiece {
  /** Offset of data[0] in the file. */
  offset: number;
  /** The chunks' bytes; owned by the stream until released (see ChunkStream.release). */
  data: Buffer;
  /** Chunk lengths in order; they sum to data.length. */
  lengths: Uint32Array;
  /** objectId(DOMAIN.chunk, chunk) of each chunk, 32 bytes each, concatenated. */
  ids: Buffer;
}

/** What a scan saw of the file (a ScanEntryOk fits): the opened file must be exactly this one. */
export interface FileIdentity {
  dev: bigint;
  ino: bigint;
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

export interface ReadChunksOptions {
  params?: ChunkerParams;
  /** Bytes read per piece, maxSize … 64 MiB (default 1 MiB). A piece is this minus a chunk tail. */
  pieceSize?: number;
  /** Pieces prepared ahead of the caller, 1 … 16 (default 2). */
  readAhead?: number;
  /** Refuse (ERR_FILE_CHANGED) unless the file is still this one, unchanged. */
  expect?: FileIdentity;
}

export const DEFAULT_PIECE_SIZE = 1024 * 1024;

/**
 * An open file being chunked. `next()` resolves with the next piece or null after the last one;
 * the end is only reported once the file is known not to have changed while read (same size and
 * times, nothing past the end), otherwise next() rejects with ERR_FILE_CHANGED.
 */
export class ChunkStream implements AsyncIterable<ChunkPiece> {
  readonly #s: RawChunkStream;
  readonly #path: string;
  /** fstat of the opened file. */
  readonly size: number;
  readonly dev: bigint;
  readonly ino: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;

  /** @internal use readChunks() */
  constructor(s: RawChunkStream, path: string) {
    this.#s = s;
    this.#path = path;
    this.size = s.size;
    this.dev = s.dev;
    this.ino = s.ino;
    this.mtimeNs = s.mtimeNs;
    this.ctimeNs = s.ctimeNs;
  }

  async next(): Promise<ChunkPiece | null> {
    try {
      return await this.#s.next();
    } catch (e) {
      throw streamError(e, this.#path);
    }
  }

  /**
   * next() for a thread that cannot await (a mount's serving thread): waits here for the next
   * piece, or null after the last, while the pool keeps reading ahead. Not while a next() is
   * pending.
   */
  take(): ChunkPiece | null {
    try {
      return this.#s.take();
    } catch (e) {
      throw streamError(e, this.#path);
    }
  }

  /**
   * Hands a piece's memory back for the next pieces. Its `data` Buffer (and every view of it)
   * becomes empty at once, so it cannot be read by mistake afterwards. Optional: unreleased
   * pieces return when collected.
   */
  release(piece: ChunkPiece): void {
    this.#s.release(piece.data);
  }

  /** Stops reading; a pending next() rejects. Safe to call more than once. */
  close(): void {
    this.#s.close();
  }

  /** Memory blocks (pieceSize + maxSize bytes each) this stream has allocated so far. */
  get blocksAllocated(): number {
    return this.#s.blocksAllocated;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ChunkPiece> {
    try {
      for (;;) {
        const p = await this.next();
        if (!p) return;
        yield p;
      }
    } finally {
      this.close();
    }
  }
}

function streamError(e: unknown, path: string): LayerFsError {
  if ((e as { code?: unknown })?.code === 'ERR_FILE_CHANGED') {
    return new LayerFsError('ERR_FILE_CHANGED', `${path} changed while it was read`, { path, hint: 'retry when the file is quiet' });
  }
  return fromNative(e, { path });
}

function checkIdentity(x: unknown): FileIdentity | undefined {
  if (x === undefined) return undefined;
  const e = x as Partial<FileIdentity>;
  if (x === null || typeof x !== 'object' || typeof e.dev !== 'bigint' || typeof e.ino !== 'bigint' || typeof e.mtimeNs !== 'bigint' || typeof e.ctimeNs !== 'bigint' || !Number.isSafeInteger(e.size) || e.size! < 0) {
    throw invalidArgument('options.expect must be {dev, ino, mtimeNs, ctimeNs: bigint; size: number}', { argument: 'options.expect' });
  }
  return { dev: e.dev, ino: e.ino, size: e.size!, mtimeNs: e.mtimeNs, ctimeNs: e.ctimeNs };
}

/** Opens `path` (never following a symlink) for chunking. Throws ERR_NATIVE_IO or ERR_FILE_CHANGED. */
export function readChunks(path: string | Uint8Array, opts: ReadChunksOptions = {}): ChunkStream {
  const p = toPathBuffer(path, 'path');
  if (opts === null || typeof opts !== 'object') throw invalidArgument('options must be an object', { argument: 'options' });
  const params = resolveParams(opts.params, 'options.params');
  const maxSize = params?.maxSize ?? DEFAULT_CHUNKER_PARAMS.maxSize;
  const raw = {
    params,
    pieceSize: optionalInt(opts.pieceSize, 'options.pieceSize', maxSize, 64 * 1024 * 1024, Math.max(DEFAULT_PIECE_SIZE, maxSize)),
    readAhead: optionalInt(opts.readAhead, 'options.readAhead', 1, 16, 2),
    expect: checkIdentity(opts.expect),
  };
  const display = displayPath(path);
  try {
    return new ChunkStream(new native.ChunkStream(p, raw), display);
  } catch (e) {
    throw streamError(e, display);
  }
}
