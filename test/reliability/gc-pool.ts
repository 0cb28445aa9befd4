// Shared content of the gc-concurrency processes: 12 binary files of 20-140 KB (chunked above
// 128 KiB) and 6 text files, the same bytes in every process.
import { seededBytes } from '../helpers/tmp.js';

export function pool(k: number): Buffer {
  if (k < 12) return seededBytes(1000 + k, 20_000 + k * 11_000);
  return Buffer.from(`pool text ${k}\n`.repeat(200 + k * 37));
}
