import { native, type MallocStats } from './binding.js';
import { invalidArgument } from '../errors.js';

export interface NativeInfo {
  /** The BLAKE3 path the C dispatcher picks on this CPU: avx512, avx2, sse41, sse2, neon or portable. */
  simd: string;
  /** Default worker threads per batch call (the core count). */
  threads: number;
  /** Addon version. */
  version: string;
  /** Version of the BLAKE3 C sources compiled in. */
  blake3Version: string;
}

export function nativeInfo(): NativeInfo {
  return { simd: native.simd, threads: native.defaultThreads, version: native.version, blake3Version: native.blake3Version };
}

/**
 * Gives the C heap's free memory back to the system (glibc malloc_trim; false elsewhere or when
 * nothing was released). Long writes call it now and then: freed Buffers otherwise stay resident.
 */
export function mallocTrim(): boolean {
  return native.mallocTrim();
}

/**
 * mallocTrim on a thread of the addon's own, so the caller goes on meanwhile; false when the last
 * one is still running (nothing started) or without glibc.
 */
export function mallocTrimSoon(): boolean {
  return native.mallocTrimSoon();
}

/** The wall clock (CLOCK_REALTIME), ns: what a file's times are stamped with (addon.cc says why not performance.now()). */
export function realtimeNs(): bigint {
  return native.realtimeNs();
}

/** glibc's heap figures (mallinfo2), bytes; null without glibc (diagnostics). */
export function mallocStats(): MallocStats | null {
  return native.mallocStats();
}

/**
 * Fixes glibc's mmap threshold at `mmapThreshold` bytes (larger blocks go back to the system
 * when freed) and caps malloc's arenas at `arenaMax`; for a long-lived process, before its
 * threads start. False elsewhere or when refused.
 */
export function mallocTune(mmapThreshold: number, arenaMax: number): boolean {
  if (!Number.isSafeInteger(mmapThreshold) || mmapThreshold < 4096 || mmapThreshold > 32 * 1024 * 1024) throw invalidArgument(`mmapThreshold must be 4 KiB … 32 MiB, got ${mmapThreshold}`, { argument: 'mmapThreshold' });
  if (!Number.isSafeInteger(arenaMax) || arenaMax < 1 || arenaMax > 64) throw invalidArgument(`arenaMax must be 1 … 64, got ${arenaMax}`, { argument: 'arenaMax' });
  return native.mallocTune(mmapThreshold, arenaMax);
}

/**
 * A large file starts (`true`) or ends (`false`) streaming into the Store. In a process that fixed
 * glibc's mmap threshold (mallocTune: the mount daemon, the `workspace commit` command), the
 * threshold is 2 MiB while any such file streams, on any thread: its chunk rows are 1 MiB, and
 * SQLite's two 1 MiB blocks per row were otherwise mapped, faulted in and unmapped row by row.
 * Calls pair up (a count). False, and nothing done, where the threshold was never fixed.
 */
export function mallocStreamHeap(on: boolean): boolean {
  return native.mallocStreamHeap(on);
}
