// Cell: what a Store of N unique small files costs on disk. Import the tree (Client.create +
// initLayerStack → ms), close (checkpoints the WAL), then Store file + WAL bytes and allocated
// blocks, and analyzeDedup (timed apart): logical bytes, unique canonical bytes (every object:
// chunks, blobs, namespace and extent records), stored and allocated bytes as the Store counts
// them. Then READS small files picked by a seeded PRNG are read back with `cat` on a fresh
// connection (readMs, and readCpuMs: this process's CPU time, steadier on a loaded machine).
// With --raw the Store is written uncompressed (LAYERFS_COMPRESS=0): the baseline that the
// family's "import ×raw" and "reads ×raw" ratios divide by. Last, without --raw, `repack` on a
// fresh connection (repackMs) and the Store file + WAL after it (repackedBytes).
//   node --import tsx bench/cells/store_footprint.ts --cell layerfs-footprint --dir FIXTURE --tmp SCRATCH --tier 10000 [--raw]

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { r1, repackStore, semanticOf, storeFiles } from '../lib/measure.js';
import { listFiles } from '../fixtures/edit-history.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';
import { GIT_INIT } from '../lib/import-tree-cell.js';
import { Client } from '../../lib/sdk/index.js';
import { Rng } from '../../test/helpers/random.js';

const FOOTPRINT_OPTIONS = {
  raw: { type: 'boolean', default: false },
} as const;

const READS = 2000;

async function layerfsFootprint(a: Given<typeof FOOTPRINT_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const storePath = path.join(path.resolve(a.tmp), 'bench.layerfs');
  if (a.raw) process.env.LAYERFS_COMPRESS = '0';
  let t = performance.now();
  let c = Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
  const ms = performance.now() - t;
  await c.close();
  const files = storeFiles(storePath);
  c = Client.connect(storePath);
  t = performance.now();
  const d = c.analyzeDedup();
  const analyzeMs = performance.now() - t;
  const info = c.info();
  await c.close();
  // Small reads: files up to 64 KiB, seeded picks, on a fresh connection.
  const all = listFiles(path.resolve(a.dir)).filter((f) => fs.statSync(path.join(a.dir!, f)).size <= 65536);
  const picks: string[] = [];
  const pick = new Rng(12345);
  for (let i = 0; i < READS; i++) picks.push(all[pick.below(all.length)]!);
  c = Client.connect(storePath);
  t = performance.now();
  const cpu0 = process.cpuUsage();
  let readBytes = 0;
  for (const p of picks) readBytes += c.cat('bench', p).length;
  const cpu = process.cpuUsage(cpu0);
  const readMs = performance.now() - t;
  await c.close();
  // Then the offline repack (not for the raw baseline, which stays uncompressed).
  const repacked = a.raw ? undefined : await repackStore(storePath);
  return {
    ms: r1(ms),
    files: typeof init.files === 'number' ? init.files : undefined,
    bytes: typeof init.bytes === 'number' ? init.bytes : undefined,
    storeBytes: files.bytes,
    allocatedBytes: files.allocated,
    objects: info.objects,
    semanticGrowth: semanticOf(init),
    allocatedGrowth: init.allocatedGrowth,
    analyzeMs: r1(analyzeMs),
    logicalBytes: d.logicalBytes,
    uniqueBytes: d.uniqueBytes,
    uniqueObjects: d.uniqueObjects,
    dedupStoredBytes: d.storedBytes,
    dedupAllocatedBytes: d.allocatedBytes,
    dedupFileBytes: d.fileBytes,
    dedupRatio: d.dedupRatio,
    compressed: !a.raw,
    reads: READS,
    readBytes,
    readMs: r1(readMs),
    readCpuMs: r1((cpu.user + cpu.system) / 1000),
    ...repacked,
  };
}

export const footprint = defineCell({
  file: import.meta.url,
  id: 'layerfs-footprint',
  tool: 'layerfs',
  args: FOOTPRINT_OPTIONS,
  required: ['dir', 'tmp'],
  run: layerfsFootprint,
});

/** `git init && git add -A && git commit`, then `git gc` (--gc): the footprint's git peer. */
export const gitInitCell = defineCell({ ...GIT_INIT, file: import.meta.url });

runIfMain(import.meta.url, footprint, gitInitCell);
