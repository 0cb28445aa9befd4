// Cell: layerfs importing a fixture directory (a tree of small files, or one large file for
// import_large) as the genesis Layer of a new Store (the peer of git-init). Reports this process's peak RSS, which includes Node + tsx (~50–60 MiB; see
// baselineRssMiB, taken before the SDK is loaded).
//   node --import tsx bench/cells/layerfs-init.ts --dir FIXTURE --tmp SCRATCH --tier 1000

import path from 'node:path';
import { cellArgs, requireArgs } from '../lib/args.js';
import { emit, fail, round1, selfMaxRssMiB } from '../lib/cell.js';
import { loadSdk, measureInit } from '../lib/layerfs.js';

const CELL = 'layerfs-init';
const a = cellArgs({});
const tier = a.tier!;

try {
  requireArgs(a, ['dir', 'tmp']);
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
    mbPerS: m.bytes !== undefined ? round1(m.bytes / 1e6 / (m.ms / 1000)) : undefined,
    baselineRssMiB,
    ...m.receipt,
  });
} catch (err) {
  fail(CELL, tier, err);
}
