/**
 * Decoding and verification of a run of stored chunks of one pack row, in the addon
 * (native/run_decode.h): each zstd frame decoded once, straight into the output where its chunks
 * fill it, every chunk re-hashed against its id many at a time, the work split over up to
 * `threads` threads (the caller's included). lib/store/chunk-run.ts builds the runs.
 */
import { invalidArgument } from '../errors.js';
import { native } from './binding.js';
import type { DictionaryInput } from './zstd-dict.js';

/** Physical forms a run may hold (docs/FORMAT.md "Physical forms", codecs 0, 1 and 3). */
export enum RunCodec {
  Raw = 0,
  Zstd = 1,
  /** A zstd frame compressed with the Store dictionary the run is given. */
  Dict = 3,
}

/** Numbers per chunk in a run's spec: stored offset in src, stored length, codec, offset in the decoded frame (0 for raw), canonical size. */
export const RUN_FIELDS = 5;

/**
 * Decodes chunk k of `spec` (RUN_FIELDS numbers each) into `out` at the sum of the sizes before
 * it and sets ok[k] to 1 when those bytes hash (chunk domain) to ids[32k, 32k + 32), else to 0
 * (its bytes in `out` are then unspecified: the caller reads that chunk another way or fails).
 * With `out` null every chunk must be raw and is verified where it is in `src`. Chunks of codec
 * RunCodec.Dict decode with `dict` (known by its id when given `{ id, bytes }`, as the zstd
 * dictionary calls take it).
 */
export function decodeRun(src: Uint8Array, spec: Float64Array, ids: Uint8Array, out: Uint8Array | null, ok: Uint8Array, threads = 1, dict?: DictionaryInput): void {
  native.decodeRun(src, spec, ids, out, ok, checkRun(spec, ids, ok, threads), ...dictArgs(dict));
}

/** A decodeRun started on the addon's pool threads. */
export interface RunTask {
  /** Finishes the work (parts no pool thread took yet run on the calling thread); afterwards `out` and `ok` hold the result. */
  wait(): void;
}

/**
 * decodeRun's work, started on the addon's pool threads while the caller goes on (fetching the
 * next run's row, say). The buffers are held by the task and must not be changed until wait().
 */
export function startRun(src: Uint8Array, spec: Float64Array, ids: Uint8Array, out: Uint8Array | null, ok: Uint8Array, threads = 1, dict?: DictionaryInput): RunTask {
  return new native.RunTask(src, spec, ids, out, ok, checkRun(spec, ids, ok, threads), ...dictArgs(dict));
}

function dictArgs(dict: DictionaryInput | undefined): [Uint8Array?, Uint8Array?] {
  if (dict === undefined) return [];
  return dict instanceof Uint8Array ? [dict] : [dict.bytes, dict.id];
}

function checkRun(spec: Float64Array, ids: Uint8Array, ok: Uint8Array, threads: number): number {
  const n = spec.length / RUN_FIELDS;
  if (!Number.isInteger(n)) throw invalidArgument(`spec must hold ${RUN_FIELDS} numbers per chunk`, { argument: 'spec' });
  if (ids.length < 32 * n || ok.length < n) throw invalidArgument('ids must hold 32 bytes and ok one byte per chunk', { argument: 'ids' });
  return Math.max(1, Math.min(16, Math.floor(threads)));
}

/**
 * RunTasks made in this process whose objects were not yet collected and finalized (across its
 * threads). Node runs the finalizers from a thread's event loop, so a thread that answers requests
 * in a synchronous loop must give that loop turns (lib/fuse/loop-turns.ts); tests check it does.
 */
export function runTasksAlive(): number {
  return native.runTasksAlive();
}
