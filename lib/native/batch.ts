/**
 * Batch work on the addon's thread pool (never on the JS thread). hashBuffers digests buffers
 * the caller already holds; scan.ts reads files.
 */
import { invalidArgument } from '../errors.js';
import { native, type RawBatchOptions, type RawDigest } from './binding.js';
import { toChunkRefs, type ChunkRef } from './chunker.js';
import { checkBytes, DEFAULT_SMALL_FILE_THRESHOLD, optionalBool, optionalInt, resolveParams, type ChunkerParams } from './params.js';
import { fromNative } from './wrap.js';

export const MAX_THREADS = 64;

export interface BatchOptions {
  /** Chunker parameters (default DEFAULT_CHUNKER_PARAMS). */
  params?: ChunkerParams;
  /** Worker threads for this call, 1..64 (default: the core count). */
  threads?: number;
  /** Content shorter than this is one blob object; longer is chunked (default 131072). */
  smallFileThreshold?: number;
}

/**
 * How content is addressed: `chunked: false` → contentId = objectId(DOMAIN.blob, bytes) and no
 * chunks; `chunked: true` → chunks with ids objectId(DOMAIN.chunk, chunk) and
 * contentId = objectId(DOMAIN.content, bytes).
 */
export interface ContentDigest {
  chunked: boolean;
  contentId: Buffer;
  chunks: ChunkRef[];
}

export interface DigestResult extends ContentDigest {
  length: number;
}

export function toContentDigest(d: RawDigest): ContentDigest {
  return { chunked: d.chunked, contentId: d.contentId, chunks: toChunkRefs(d.chunkLengths, d.chunkIds) };
}

export interface ScanExtras {
  readData?: unknown;
  maxDataSize?: unknown;
  maxBatchData?: unknown;
  dataArena?: unknown;
  digestOversize?: unknown;
  xattrs?: unknown;
  retries?: unknown;
}

export function resolveBatchOptions(opts: unknown, extra: ScanExtras = {}): RawBatchOptions {
  if (opts !== undefined && (opts === null || typeof opts !== 'object')) {
    throw invalidArgument('options must be an object', { argument: 'options' });
  }
  const o = (opts ?? {}) as BatchOptions;
  return {
    params: resolveParams(o.params, 'options.params'),
    threads: optionalInt(o.threads, 'options.threads', 1, MAX_THREADS, native.defaultThreads),
    smallFileThreshold: optionalInt(o.smallFileThreshold, 'options.smallFileThreshold', 0, Number.MAX_SAFE_INTEGER, DEFAULT_SMALL_FILE_THRESHOLD),
    readData: optionalBool(extra.readData, 'options.readData', true),
    maxDataSize: optionalInt(extra.maxDataSize, 'options.maxDataSize', 0, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    maxBatchData: optionalInt(extra.maxBatchData, 'options.maxBatchData', 0, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    ...(extra.dataArena === undefined ? {} : { dataArena: checkArena(extra.dataArena) }),
    digestOversize: optionalBool(extra.digestOversize, 'options.digestOversize', true),
    xattrs: optionalBool(extra.xattrs, 'options.xattrs', true),
    retries: optionalInt(extra.retries, 'options.retries', 0, 100, 2),
  };
}

function checkArena(value: unknown): Uint8Array {
  checkBytes(value, 'options.dataArena');
  return value;
}

/**
 * Digests each buffer on the thread pool. The buffers must not be modified until the promise
 * settles (the workers read them in place, without copying).
 */
export async function hashBuffers(buffers: Uint8Array[], opts?: BatchOptions): Promise<DigestResult[]> {
  if (!Array.isArray(buffers)) throw invalidArgument('buffers must be an array of Uint8Array', { argument: 'buffers' });
  for (let i = 0; i < buffers.length; i++) checkBytes(buffers[i], `buffers[${i}]`);
  const raw = resolveBatchOptions(opts);
  let results;
  try {
    results = await native.hashBuffers(buffers, raw);
  } catch (e) {
    throw fromNative(e);
  }
  return results.map((r) => ({ length: r.length, ...toContentDigest(r) }));
}
