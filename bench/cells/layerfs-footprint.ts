// Cell: what a Store of N unique small files costs on disk. Import the tree (Client.create +
// initLayerStack → ms), close (checkpoints the WAL), then Store file + WAL bytes and allocated
// blocks, and analyzeDedup (timed apart): logical bytes, unique canonical bytes (every object:
// chunks, blobs, namespace and extent records), stored and allocated bytes as the Store counts
// them.
//   node --import tsx bench/cells/layerfs-footprint.ts --dir FIXTURE --tmp SCRATCH --tier 10000

import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { emit, fail } from '../lib/cell.js';
import { loadCampaignSdk, r1, semanticOf, storeFiles } from './_campaign.js';

const CELL = 'layerfs-footprint';
const { values: a } = parseArgs({
  options: { dir: { type: 'string' }, tmp: { type: 'string' }, tier: { type: 'string', default: '?' } },
});
const tier = a.tier!;

try {
  if (a.dir === undefined || a.tmp === undefined) throw new Error('--dir and --tmp are required');
  const storePath = path.join(path.resolve(a.tmp), 'bench.layerfs');
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
  });
} catch (err) {
  fail(CELL, tier, err);
}
