// Cell: layerfs importing a tree fixture as the genesis Layer of a new Store (the peer of
// git-init). Reports this process's peak RSS, which includes Node + tsx (~50–60 MiB; see
// baselineRssMiB, taken before the SDK is loaded).
//   node --import tsx bench/cells/layerfs-init.ts --dir FIXTURE --tmp SCRATCH --tier 1000

import path from 'node:path';
import { parseArgs } from 'node:util';
import { emit, fail, round1, selfMaxRssMiB } from '../lib/cell.js';
import { loadSdk, measureInit } from '../lib/layerfs.js';

const CELL = 'layerfs-init';
const { values: a } = parseArgs({
  options: { dir: { type: 'string' }, tmp: { type: 'string' }, tier: { type: 'string', default: '?' } },
});
const tier = a.tier!;

try {
  if (a.dir === undefined || a.tmp === undefined) throw new Error('--dir and --tmp are required');
  const baselineRssMiB = round1(selfMaxRssMiB());
  const sdk = await loadSdk();
  const m = await measureInit(sdk, path.resolve(a.dir), path.resolve(a.tmp));
  emit({
    cell: CELL,
    tier,
    ms: round1(m.ms),
    closeMs: round1(m.closeMs),
    storeBytes: m.storeBytes,
    allocatedBytes: m.allocatedBytes,
    objects: m.objects,
    objectsReused: m.objectsReused,
    receiptFiles: m.files,
    receiptBytes: m.bytes,
    receiptMs: m.receiptMs,
    baselineRssMiB,
    ...m.receipt,
  });
} catch (err) {
  fail(CELL, tier, err);
}
