/**
 * Chunker parameters and argument checks. Cut points are part of the on-disk format, so the
 * defaults here must match docs/FORMAT.md; see docs/NATIVE.md for the bounds' reasons.
 */
import { invalidArgument } from '../errors.js';
import type { RawParams } from './binding.js';

export interface ChunkerParams {
  /** Smallest chunk (except the last one of a stream). Integer, 64 ≤ minSize < avgSize. */
  minSize: number;
  /** Target average; a power of two with minSize < avgSize < maxSize. */
  avgSize: number;
  /** Largest chunk; a chunk is forced here. Integer ≤ 16 MiB. */
  maxSize: number;
  /** Normalized-chunking level 0..3 (default 2). */
  normalization?: number;
}

export const DEFAULT_CHUNKER_PARAMS: Readonly<Required<ChunkerParams>> = Object.freeze({
  minSize: 8192,
  avgSize: 16384,
  maxSize: 32768,
  normalization: 2,
});

export const CHUNKER_LIMITS = Object.freeze({ minSize: 64, maxSize: 16 * 1024 * 1024, maxNormalization: 3 });

/** Default size below which content is one blob object instead of chunks. */
export const DEFAULT_SMALL_FILE_THRESHOLD = 131072;

function checkInt(value: unknown, name: string, lo: number, hi: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < lo || value > hi) {
    throw invalidArgument(`${name} must be an integer in ${lo}..${hi}, got ${String(value)}`, { argument: name });
  }
  return value;
}

/**
 * Validates (possibly partial) params, filling gaps from the defaults. `undefined` means the
 * defaults and is passed through as `undefined`, which the addon reads fastest.
 */
export function resolveParams(params: unknown, name = 'params'): RawParams | undefined {
  if (params === undefined) return undefined;
  if (params === null || typeof params !== 'object') {
    throw invalidArgument(`${name} must be an object`, { argument: name });
  }
  const p = params as Partial<ChunkerParams>;
  const { minSize: lo, maxSize: hi, maxNormalization } = CHUNKER_LIMITS;
  const minSize = checkInt(p.minSize ?? DEFAULT_CHUNKER_PARAMS.minSize, `${name}.minSize`, lo, hi);
  const avgSize = checkInt(p.avgSize ?? DEFAULT_CHUNKER_PARAMS.avgSize, `${name}.avgSize`, lo, hi);
  const maxSize = checkInt(p.maxSize ?? DEFAULT_CHUNKER_PARAMS.maxSize, `${name}.maxSize`, lo, hi);
  const normalization = checkInt(p.normalization ?? DEFAULT_CHUNKER_PARAMS.normalization, `${name}.normalization`, 0, maxNormalization);
  if ((avgSize & (avgSize - 1)) !== 0) {
    throw invalidArgument(`${name}.avgSize must be a power of two, got ${avgSize}`, { argument: `${name}.avgSize` });
  }
  if (minSize >= avgSize) {
    throw invalidArgument(`${name}.minSize (${minSize}) must be smaller than avgSize (${avgSize})`, { argument: `${name}.minSize` });
  }
  if (maxSize <= avgSize) {
    throw invalidArgument(`${name}.maxSize (${maxSize}) must be larger than avgSize (${avgSize})`, { argument: `${name}.maxSize` });
  }
  return { minSize, avgSize, maxSize, normalization };
}

export function checkBytes(value: unknown, name: string): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw invalidArgument(`${name} must be a Buffer or Uint8Array`, { argument: name });
  }
}

export function checkString(value: unknown, name: string): asserts value is string {
  if (typeof value !== 'string') throw invalidArgument(`${name} must be a string`, { argument: name });
}

export function optionalInt(value: unknown, name: string, lo: number, hi: number, fallback: number): number {
  return value === undefined ? fallback : checkInt(value, name, lo, hi);
}

export function optionalBool(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalidArgument(`${name} must be a boolean`, { argument: name });
  return value;
}

/** File names are bytes: strings are encoded as UTF-8, Buffers pass through untouched. */
export function toPathBuffer(value: unknown, name: string): Buffer {
  let buf: Buffer;
  if (typeof value === 'string') buf = Buffer.from(value, 'utf8');
  else if (value instanceof Uint8Array) buf = Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  else throw invalidArgument(`${name} must be a string or Buffer`, { argument: name });
  if (buf.length === 0 || buf.includes(0)) {
    throw invalidArgument(`${name} must be a non-empty path without NUL bytes`, { argument: name });
  }
  return buf;
}

export function displayPath(p: string | Uint8Array): string {
  return typeof p === 'string' ? p : Buffer.from(p.buffer, p.byteOffset, p.byteLength).toString('utf8');
}
