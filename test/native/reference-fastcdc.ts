/**
 * The chunker's specification as a slow byte-at-a-time loop (docs/NATIVE.md): the addon's
 * two-bytes-per-step loop must cut at exactly these points.
 */
import { referenceBlake3 } from './reference-blake3.js';

export interface RefParams {
  minSize: number;
  avgSize: number;
  maxSize: number;
  normalization: number;
}

export const GEAR_SEED = 'layerfs/fastcdc/gear/v1';

let gearCache: bigint[] | undefined;

/** gear[i] = little-endian u64 number i of BLAKE3-XOF(GEAR_SEED, 2048 bytes). */
export function referenceGear(): bigint[] {
  if (!gearCache) {
    const xof = referenceBlake3(Buffer.from(GEAR_SEED, 'utf8'), 2048);
    gearCache = Array.from({ length: 256 }, (_, i) => xof.readBigUInt64LE(i * 8));
  }
  return gearCache;
}

/** `bits` one-bits at positions 62 - floor(j * 48 / bits), j = 0..bits-1. */
export function referenceMask(bits: number): bigint {
  let m = 0n;
  for (let j = 0; j < bits; j++) m |= 1n << BigInt(62 - Math.floor((j * 48) / bits));
  return m;
}

export function referenceChunkLengths(data: Uint8Array, p: RefParams): number[] {
  const gear = referenceGear();
  const bits = Math.log2(p.avgSize);
  const maskS = referenceMask(bits + p.normalization);
  const maskL = referenceMask(bits - p.normalization);
  const out: number[] = [];
  let start = 0;
  while (start < data.length) {
    const remaining = data.length - start;
    if (remaining <= p.minSize) {
      out.push(remaining);
      break;
    }
    const limit = Math.min(remaining, p.maxSize);
    let cut = limit;
    let fp = 0n;
    for (let i = p.minSize; i < limit; i++) {
      fp = BigInt.asUintN(64, (fp << 1n) + gear[data[start + i]!]!);
      if ((fp & (i < p.avgSize ? maskS : maskL)) === 0n) {
        cut = i + 1;
        break;
      }
    }
    out.push(cut);
    start += cut;
  }
  return out;
}
