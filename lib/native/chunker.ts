/**
 * FastCDC content-defined chunking. Cut points depend only on the bytes (and params): any split
 * of a stream through Chunker gives the same lengths as chunkLengths on the whole buffer.
 */
import { native, type RawChunker } from './binding.js';
import { DOMAIN } from './hash.js';
import { checkBytes, checkString, resolveParams, type ChunkerParams } from './params.js';
import { callNative } from './wrap.js';

/** One chunk of a buffer: its place and its object id. `id` is a view into a shared Buffer. */
export interface ChunkRef {
  offset: number;
  length: number;
  id: Buffer;
}

/** Expands the addon's compact form (lengths + concatenated 32-byte ids) into ChunkRefs. */
export function toChunkRefs(lengths: Uint32Array, ids: Buffer): ChunkRef[] {
  const out: ChunkRef[] = new Array<ChunkRef>(lengths.length);
  let offset = 0;
  for (let i = 0; i < lengths.length; i++) {
    const length = lengths[i]!;
    out[i] = { offset, length, id: ids.subarray(i * 32, i * 32 + 32) };
    offset += length;
  }
  return out;
}

/** Chunk lengths of the whole buffer (sum = data.length; [] for empty input). */
export function chunkLengths(data: Uint8Array, params?: ChunkerParams): number[] {
  checkBytes(data, 'data');
  const p = resolveParams(params);
  return Array.from(callNative(() => native.chunkLengths(data, p)));
}

/** Chunks and their ids (objectId(domainTag, chunk bytes)) in one native pass. */
export function chunkAndHash(data: Uint8Array, params?: ChunkerParams, domainTag: string = DOMAIN.chunk): ChunkRef[] {
  checkBytes(data, 'data');
  checkString(domainTag, 'domainTag');
  const p = resolveParams(params);
  const r = callNative(() => native.chunkAndHash(data, p, domainTag));
  return toChunkRefs(r.lengths, r.ids);
}

/** Streaming chunker. Holds no data between pushes: only a fingerprint and a position. */
export class Chunker {
  readonly #c: RawChunker;

  constructor(params?: ChunkerParams) {
    const p = resolveParams(params);
    this.#c = callNative(() => new native.Chunker(p));
  }

  /** Lengths of the chunks completed by this push (the first may span earlier pushes). */
  push(data: Uint8Array): number[] {
    checkBytes(data, 'data');
    return Array.from(this.#c.push(data));
  }

  /** The final partial chunk, if any; the chunker is then ready for a new stream. */
  finish(): number[] {
    return Array.from(this.#c.finish());
  }
}

/** The 256-entry gear table (part of the on-disk format; see docs/NATIVE.md). */
export function gearTable(): BigUint64Array {
  return native.gearTable();
}
