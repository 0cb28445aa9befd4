/**
 * BLAKE3-256 and object ids. An object id is BLAKE3(utf8(domainTag) ‖ 0x00 ‖ bytes); the tags
 * below are part of the on-disk format.
 */
import { native, type RawHasher } from './binding.js';
import { checkBytes, checkString, optionalInt } from './params.js';
import { callNative } from './wrap.js';

export const DOMAIN = Object.freeze({
  /** A FastCDC chunk of a large file. */
  chunk: 'layerfs/chunk/v1',
  /** The whole content of a file below the small-file threshold. */
  blob: 'layerfs/blob/v1',
  /** Digest of the whole content of a chunked file. */
  content: 'layerfs/content/v1',
} as const);

export type DomainTag = (typeof DOMAIN)[keyof typeof DOMAIN];

/** Plain (unkeyed) BLAKE3-256 of `data`. */
export function blake3(data: Uint8Array): Buffer {
  checkBytes(data, 'data');
  // allocUnsafe comes from Node's pooled slab: far cheaper than a Buffer made in native code.
  return native.blake3(data, Buffer.allocUnsafe(32));
}

/** BLAKE3-256 of utf8(domainTag) ‖ 0x00 ‖ parts[0] ‖ parts[1] ‖ … */
export function objectId(domainTag: string, ...parts: Uint8Array[]): Buffer {
  checkString(domainTag, 'domainTag');
  for (let i = 0; i < parts.length; i++) checkBytes(parts[i], `parts[${i}]`);
  const out = Buffer.allocUnsafe(32);
  if (parts.length === 1) return native.objectIdInto(out, domainTag, parts[0]!);
  return native.objectIdInto(out, domainTag, ...parts);
}

/** Incremental BLAKE3. With a domain tag, digest() equals objectId(tag, everything updated). */
export class Blake3Hasher {
  readonly #h: RawHasher;

  constructor(domainTag?: string) {
    if (domainTag !== undefined) checkString(domainTag, 'domainTag');
    this.#h = callNative(() => new native.Blake3Hasher(domainTag));
  }

  update(data: Uint8Array): this {
    checkBytes(data, 'data');
    this.#h.update(data);
    return this;
  }

  /** 32 bytes by default; longer lengths give BLAKE3's extended output. Does not reset. */
  digest(length = 32): Buffer {
    const n = optionalInt(length, 'length', 1, 1 << 24, 32);
    return this.#h.digest(n);
  }

  /** Back to the state right after construction (tag absorbed, no data). */
  reset(): this {
    this.#h.reset();
    return this;
  }
}
