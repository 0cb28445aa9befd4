import type { ChunkRef } from '../../lib/store/chunk-run.js';

/** The chunks of `run` that cover [pos, pos + len), and the offset of pos in the first. */
export function cover(run: readonly ChunkRef[], pos: number, len: number): { chunks: ChunkRef[]; from: number } {
  const chunks: ChunkRef[] = [];
  let at = 0;
  let from = 0;
  for (const c of run) {
    if (at + c.length > pos && at < pos + len) {
      if (chunks.length === 0) from = pos - at;
      chunks.push(c);
    }
    at += c.length;
  }
  return { chunks, from };
}
