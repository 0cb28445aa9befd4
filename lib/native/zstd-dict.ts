/**
 * zstd dictionaries (native/napi_zstd_dict.cc): training from samples, and frames compressed
 * with a dictionary. Frames are magicless and carry no dictionary id: the Store names the
 * dictionary object in the frame's index rows.
 */
import { LayerFsError } from '../errors.js';
import { native } from './binding.js';

interface DictBinding {
  zstdTrainDictionary(samples: Uint8Array, sizes: Uint32Array, capacity: number, k?: number): Buffer | null;
  zstdDictCompress(data: Uint8Array, level: number, dict: Uint8Array, key?: Uint8Array): Buffer;
  zstdDictDecompress(frame: Uint8Array, size: number, dict: Uint8Array, key?: Uint8Array): Buffer;
  zstdDictDecompressInto(frame: Uint8Array, out: Uint8Array, size: number, dict: Uint8Array, key?: Uint8Array): number;
}

const dict = native as unknown as DictBinding;

/**
 * A dictionary as the calls below take it: its bytes, or its bytes with the dictionary object's
 * id, checked against those bytes when they were read. With the id, the addon knows the
 * dictionary it already digested by comparing 32 bytes instead of the whole dictionary (262 kB)
 * on every frame.
 */
export type DictionaryInput = Uint8Array | { readonly id: Uint8Array; readonly bytes: Uint8Array };

function bytesOf(d: DictionaryInput): Uint8Array {
  return d instanceof Uint8Array ? d : d.bytes;
}

function keyOf(d: DictionaryInput): Uint8Array | undefined {
  return d instanceof Uint8Array ? undefined : d.id;
}

/**
 * A dictionary of at most `capacity` bytes trained on `samples` (back to back, `sizes` each);
 * null when this system has no zstd dictionary builder or the samples do not train one. With
 * `k`, one fastCover pass with that segment size (and d = 8) instead of ZDICT's parameter search.
 */
export function zstdTrainDictionary(samples: Uint8Array, sizes: Uint32Array, capacity: number, k?: number): Buffer | null {
  return dict.zstdTrainDictionary(samples, sizes, capacity, k);
}

/** Compresses `data` into one frame that needs `dictionary` to decode. */
export function zstdDictCompress(data: Uint8Array, level: number, dictionary: DictionaryInput): Buffer {
  return dict.zstdDictCompress(data, level, bytesOf(dictionary), keyOf(dictionary));
}

/** Decodes a frame made by zstdDictCompress with the same dictionary; damage is ERR_CORRUPT. */
export function zstdDictDecompress(frame: Uint8Array, size: number, dictionary: DictionaryInput): Buffer {
  try {
    return dict.zstdDictDecompress(frame, size, bytesOf(dictionary), keyOf(dictionary));
  } catch (e) {
    throw new LayerFsError('ERR_CORRUPT', `a compressed frame does not decode with its dictionary: ${(e as Error).message}`, { cause: e });
  }
}

/** zstdDictDecompress into `out` when the decoded size fits (zstd.ts zstdDecompressInto); returns that size. */
export function zstdDictDecompressInto(frame: Uint8Array, out: Uint8Array, size: number, dictionary: DictionaryInput): number {
  try {
    return dict.zstdDictDecompressInto(frame, out, size, bytesOf(dictionary), keyOf(dictionary));
  } catch (e) {
    throw new LayerFsError('ERR_CORRUPT', `a compressed frame does not decode with its dictionary: ${(e as Error).message}`, { cause: e });
  }
}
