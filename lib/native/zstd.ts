/**
 * zstd, compiled into the addon (native/napi_zstd.cc). Frames are magicless and carry no
 * checksum or size: the Store keeps the decoded size and re-hashes what it decodes.
 */
import { LayerFsError } from '../errors.js';
import { native } from './binding.js';
import { type DictionaryInput, zstdDictCompress } from './zstd-dict.js';

export const ZSTD_VERSION: string = native.zstdVersion;

/** Compresses `data` into one frame; with `prefix`, the frame may refer to those bytes (a delta). */
export function zstdCompress(data: Uint8Array, level: number, prefix?: Uint8Array): Buffer {
  return native.zstdCompress(data, level, prefix);
}

/** One frame of `data` at `level`, with the dictionary when one is given (zstdDictCompress), else without. */
export function zstdCompressWith(data: Uint8Array, level: number, dict?: DictionaryInput): Buffer {
  return dict ? zstdDictCompress(data, level, dict) : zstdCompress(data, level);
}

/**
 * Starts compressing a copy of `data` on the addon's background threads, with a dictionary
 * (zstd-dict.ts DictionaryInput) or a prefix (a copy of it: a delta's base) if given; returns a job number for zstdCompressResult.
 * Jobs start in order; each result must be taken once.
 */
export function zstdCompressStart(data: Uint8Array, level: number, dict?: DictionaryInput, prefix?: Uint8Array): number {
  if (dict === undefined || dict instanceof Uint8Array) return native.zstdCompressStart(data, level, dict, prefix);
  return native.zstdCompressStart(data, level, dict.bytes, prefix, dict.id);
}

/**
 * The frame of a job started with zstdCompressStart, waiting for it if it is still running;
 * undefined when the addon no longer holds it. Results nobody takes are dropped once too many are
 * held (native/napi_zstd.cc, kKeep), so a caller that held one too long compresses again itself.
 */
export function zstdCompressResult(job: number): Buffer | undefined {
  return native.zstdCompressResult(job);
}

/**
 * Decodes one frame that must yield exactly `size` bytes (with the same `prefix` it was
 * compressed with). A damaged frame is ERR_CORRUPT.
 */
export function zstdDecompress(frame: Uint8Array, size: number, prefix?: Uint8Array): Buffer {
  try {
    return native.zstdDecompress(frame, size, prefix);
  } catch (e) {
    throw new LayerFsError('ERR_CORRUPT', `a compressed frame does not decode: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * zstdDecompress into `out` (a buffer the caller reuses frame after frame) when the decoded size
 * fits; returns that size either way, so a caller whose buffer is too small grows it and calls
 * again (nothing is decoded then). `size` -1: the size the frame header records.
 */
export function zstdDecompressInto(frame: Uint8Array, out: Uint8Array, size: number, prefix?: Uint8Array): number {
  try {
    return native.zstdDecompressInto(frame, out, size, prefix);
  } catch (e) {
    throw new LayerFsError('ERR_CORRUPT', `a compressed frame does not decode: ${(e as Error).message}`, { cause: e });
  }
}
