/**
 * zstd dictionaries (native/napi_zstd_dict.cc): training from samples, and frames compressed
 * with a dictionary. Frames are magicless and carry no dictionary id: the Store names the
 * dictionary object in the frame's index rows.
 */
import { LayerFsError } from '../errors.js';
import { native } from './binding.js';

interface DictBinding {
  zstdTrainDictionary(samples: Uint8Array, sizes: Uint32Array, capacity: number, k?: number): Buffer | null;
  zstdDictCompress(data: Uint8Array, level: number, dict: Uint8Array): Buffer;
  zstdDictDecompress(frame: Uint8Array, size: number, dict: Uint8Array): Buffer;
  zstdDictDecompressInto(frame: Uint8Array, out: Uint8Array, size: number, dict: Uint8Array): number;
}

const dict = native as unknown as DictBinding;

/**
 * A dictionary of at most `capacity` bytes trained on `samples` (back to back, `sizes` each);
 * null when this system has no zstd dictionary builder or the samples do not train one. With
 * `k`, one fastCover pass with that segment size (and d = 8) instead of ZDICT's parameter search.
 */
export function zstdTrainDictionary(samples: Uint8Array, sizes: Uint32Array, capacity: number, k?: number): Buffer | null {
  return dict.zstdTrainDictionary(samples, sizes, capacity, k);
}

/** Compresses `data` into one frame that needs `dictionary` to decode. */
export function zstdDictCompress(data: Uint8Array, level: number, dictionary: Uint8Array): Buffer {
  return dict.zstdDictCompress(data, level, dictionary);
}

/** Decodes a frame made by zstdDictCompress with the same dictionary; damage is ERR_CORRUPT. */
export function zstdDictDecompress(frame: Uint8Array, size: number, dictionary: Uint8Array): Buffer {
  try {
    return dict.zstdDictDecompress(frame, size, dictionary);
  } catch (e) {
    throw new LayerFsError('ERR_CORRUPT', `a compressed frame does not decode with its dictionary: ${(e as Error).message}`, { cause: e });
  }
}

/** zstdDictDecompress into `out` when the decoded size fits (zstd.ts zstdDecompressInto); returns that size. */
export function zstdDictDecompressInto(frame: Uint8Array, out: Uint8Array, size: number, dictionary: Uint8Array): number {
  try {
    return dict.zstdDictDecompressInto(frame, out, size, dictionary);
  } catch (e) {
    throw new LayerFsError('ERR_CORRUPT', `a compressed frame does not decode with its dictionary: ${(e as Error).message}`, { cause: e });
  }
}
