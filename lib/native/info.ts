import { native } from './binding.js';

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
