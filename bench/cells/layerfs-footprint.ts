// Cell: what a Store of N unique small files costs on disk. Import the tree (Client.create +
// initLayerStack → ms), close (checkpoints the WAL), then Store file + WAL bytes and allocated
// blocks, and analyzeDedup (timed apart): logical bytes, unique canonical bytes (every object:
// chunks, blobs, namespace and extent records), stored and allocated bytes as the Store counts
// them. Then READS small files picked by a seeded PRNG are read back with `cat` on a fresh
// connection (readMs, and readCpuMs: this process's CPU time, steadier on a loaded machine).
// With --raw the Store is written uncompressed (LAYERFS_COMPRESS=0): the baseline that the
// family's "import ×raw" and "reads ×raw" ratios divide by. Last, without --raw, `repack` on a
// fresh connection (repackMs) and the Store file + WAL after it (repackedBytes).
//   node --import tsx bench/cells/layerfs-footprint.ts --dir FIXTURE --tmp SCRATCH --tier 10000 [--raw]

import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { emit, fail } from '../lib/cell.js';
import { loadCampaignSdk, r1, semanticOf, storeFiles } from './_campaign.js';
import { repackStore } from './_branches-sdk.js';
import { listFiles } from './_edit-history.js';

const CELL = 'layerfs-footprint';
const { values: a } = parseArgs({
  options: { dir: { type: 'string' }, tmp: { type: 'string' }, tier: { type: 'string', default: '?' }, raw: { type: 'boolean', default: false } },
});
const tier = a.tier!;
const READS = 2000;

try {
  if (a.dir === undefined || a.tmp === undefined) throw new Error('--dir and --tmp are required');
  const storePath = path.join(path.resolve(a.tmp), 'bench.layerfs');
  if (a.raw) process.env.LAYERFS_COMPRESS = '0';
  const sdk = await loadCampaignSdk();
  let t = performance.now();
  let c = sdk.Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
  const ms = performance.now() - t;
  await c.close();
  const files = storeFiles(storePath);
  c = sdk.Client.connect(storePath);
  t = performance.now();
  const d = c.analyzeDedup();
  const analyzeMs = performance.now() - t;
  const info = c.info();
  await c.close();
  // Small reads: files up to 64 KiB, picked by a seeded LCG, on a fresh connection.
  const all = listFiles(path.resolve(a.dir)).filter((f) => fs.statSync(path.join(a.dir!, f)).size <= 65536);
  const picks: string[] = [];
  let seed = 12345;
  for (let i = 0; i < READS; i++) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    picks.push(all[seed % all.length]!);
  }
  c = sdk.Client.connect(storePath);
  t = performance.now();
  const cpu0 = process.cpuUsage();
  let readBytes = 0;
  for (const p of picks) readBytes += c.cat('bench', p).length;
  const cpu = process.cpuUsage(cpu0);
  const readMs = performance.now() - t;
  await c.close();
  // Then the offline repack (not for the raw baseline, which stays uncompressed).
  const repacked = a.raw ? undefined : await repackStore(sdk, storePath);
  emit({
    cell: CELL,
    tier,
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
  });
} catch (err) {
  fail(CELL, tier, err);
}
