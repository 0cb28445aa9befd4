// Cell: what an edit history costs in a Store. Import the tree (Client.create + initLayerStack),
// fork a Branch, materialize a Workspace, then ROUNDS rounds of small edits to 1% of the files
// (cells/_edit-history.ts), each committed with commitWorkspace. Reports the Store file + WAL
// after the final close (storeBytes), the same right after the import (importBytes), commit
// times, and checks the Branch head against the Workspace at the end. Then `repack` on a fresh
// connection (repackMs) and the Store file + WAL after it (repackedBytes).
//   node --import tsx bench/cells/layerfs-edit-history.ts --dir FIXTURE --tmp SCRATCH --tier 10000 [--rounds 100]

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cellArgs, requireArgs } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { loadBranchSdk, repackStore, storeFiles } from './_branches-sdk.js';
import { applyRound, listFiles, ROUNDS } from './_edit-history.js';

const CELL = 'layerfs-edit-history';
const a = cellArgs({ rounds: { type: 'string' } });
const tier = a.tier!;

try {
  requireArgs(a, ['dir', 'tmp']);
  const rounds = Number(a.rounds ?? ROUNDS);
  const tmp = path.resolve(a.tmp);
  const storePath = path.join(tmp, 'bench.layerfs');
  const wsDir = path.join(tmp, 'ws');
  const sdk = await loadBranchSdk();
  let t = performance.now();
  let c = sdk.Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
  const importMs = performance.now() - t;
  await c.close();
  const importBytes = storeFiles(storePath).bytes;
  c = sdk.Client.connect(storePath);
  const branch = c.forkBranch({ name: 'work', layer: init.layer.id });
  const ws = await c.createWorkspace(branch.name, { at: wsDir });
  const files = listFiles(wsDir);
  let commitMs = 0;
  let editBytes = 0;
  let semantic = 0;
  for (let r = 1; r <= rounds; r++) {
    editBytes += applyRound(wsDir, files, r).editBytes;
    t = performance.now();
    const receipt = await c.commitWorkspace(ws.id);
    commitMs += performance.now() - t;
    if (receipt.outcome !== 'Created') throw new Error(`round ${r}: commitWorkspace outcome ${receipt.outcome}`);
    semantic += receipt.bytesInserted ?? 0;
  }
  // The head must hold what the Workspace holds (a sample of every 50th file).
  for (let i = 0; i < files.length; i += 50) {
    const want = fs.readFileSync(path.join(wsDir, files[i]!));
    if (!want.equals(c.cat(branch.name, files[i]!))) throw new Error(`${files[i]} differs between the Branch head and the Workspace`);
  }
  const info = c.info();
  await c.close();
  const end = storeFiles(storePath);
  // Then the offline repack, git gc --aggressive's counterpart (the git cell runs that one).
  const repacked = await repackStore(sdk, storePath);
  emit({
    cell: CELL,
    tier,
    ms: Math.round(commitMs),
    importMs: Math.round(importMs),
    files: files.length,
    rounds,
    editBytes,
    semanticGrowth: semantic,
    importBytes,
    storeBytes: end.bytes,
    historyBytes: end.bytes - importBytes,
    objects: info.objects,
    ...repacked,
  });
} catch (err) {
  fail(CELL, tier, err);
}
