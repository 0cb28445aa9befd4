// Small measurement helpers of the cells: rounding, medians, the Store file's size (with its WAL),
// a Store repack timed on its own connection, directory growth, scratch directories.

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '../../lib/sdk/index.js';
import { duBytes } from './cell.js';

/** The receipt's semantic bytes (bytesInserted; semanticGrowth as a fallback). */
export function semanticOf(r: { bytesInserted?: number; semanticGrowth?: number }): number | undefined {
  return r.bytesInserted ?? r.semanticGrowth;
}

export const r1 = (x: number): number => Math.round(x * 10) / 10;
export const r3 = (x: number): number => Math.round(x * 1000) / 1000;
/** MB/s (decimal) of `bytes` moved in `ms`. */
export const mbps = (bytes: number, ms: number): number => r1(bytes / 1e6 / (ms / 1000));

/** Apparent and allocated bytes of the Store file plus its WAL (absent WAL counts 0). */
export function storeFiles(storePath: string): { bytes: number; allocated: number; walBytes: number } {
  let bytes = 0;
  let allocated = 0;
  let walBytes = 0;
  for (const f of [storePath, `${storePath}-wal`]) {
    try {
      const st = fs.statSync(f);
      bytes += st.size;
      allocated += st.blocks * 512;
      if (f !== storePath) walBytes = st.size;
    } catch {
      // no WAL right now
    }
  }
  return { bytes, allocated, walBytes };
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Nearest-rank percentile (p in 0..100). */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/**
 * Repacks the Store at `storePath` on a connection of its own (`db repack`, like git gc
 * --aggressive) and returns its time and the Store file + WAL bytes after the close.
 */
export async function repackStore(storePath: string): Promise<{ repackMs: number; repackedBytes: number; repackRewriteMs?: number; repackVacuumMs?: number } | undefined> {
  const c = Client.connect(storePath);
  try {
    const t = performance.now();
    const r = await c.repack();
    const repackMs = performance.now() - t;
    await c.close();
    return { repackMs: Math.round(repackMs), repackedBytes: storeFiles(storePath).bytes, repackRewriteMs: r.rewriteMs === undefined ? undefined : Math.round(r.rewriteMs), repackVacuumMs: r.vacuumMs === undefined ? undefined : Math.round(r.vacuumMs) };
  } catch (e) {
    await c.close();
    throw e;
  }
}

/** Signed growth of a directory (du -sb) around `fn`. */
export function duGrowth<T>(dir: string, fn: () => T): { value: T; growth: number; after: number } {
  const before = duBytes(dir);
  const value = fn();
  const after = duBytes(dir);
  return { value, growth: after - before, after };
}

export function rmrf(p: string): void {
  fs.rmSync(p, { recursive: true, force: true });
}

export function scratch(tmp: string, name: string): string {
  const p = path.join(path.resolve(tmp), name);
  fs.mkdirSync(p, { recursive: true });
  return p;
}
