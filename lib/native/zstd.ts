/**
 * zstd, compiled into the addon (native/napi_zstd.cc). Frames are magicless and carry no
 * checksum or size: the Store keeps the decoded size and re-hashes what it decodes.
 */
import { LayerFsError } from '../errors.js';
import { native } from './binding.js';

export const ZSTD_VERSION: string = native.zstdVersion;

/** Compresses `data` into one frame; with `prefix`, the frame may refer to those bytes (a delta). */
export function zstdCompress(data: Uint8Array, level: number, prefix?: Uint8Array): Buffer {
  return native.zstdCompress(data, level, prefix);
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
