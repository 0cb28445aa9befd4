// Cell: layerfs importing one large random file (1 GiB full, 64 MiB quick): raw throughput of
// read → chunk → hash → store, with no per-file overhead to hide behind.
//   node --import tsx bench/cells/layerfs-import-large.ts --dir FIXTURE --tmp SCRATCH --tier 1024MiB

import path from 'node:path';
import { parseArgs } from 'node:util';
import { emit, fail, round1, selfMaxRssMiB } from '../lib/cell.js';
import { loadSdk, measureInit } from '../lib/layerfs.js';

const CELL = 'layerfs-import-large';
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
    receiptBytes: m.bytes,
    receiptMs: m.receiptMs,
    mbPerS: m.bytes !== undefined ? round1(m.bytes / 1e6 / (m.ms / 1000)) : undefined,
    baselineRssMiB,
    ...m.receipt,
  });
} catch (err) {
  fail(CELL, tier, err);
}
