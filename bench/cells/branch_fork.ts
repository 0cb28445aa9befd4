// Cell: time of forkBranch alone on a LayerStack imported from a tree fixture. The import is
// setup (timed apart as initMs, never part of `ms`); then --forks Branches are forked from the
// genesis Layer one by one, each timed alone. `ms` is the median fork. A fork copies no data, so
// objects and Store bytes before/after the forks are reported as a check of that claim.
//   node --import tsx bench/cells/branch_fork.ts --cell layerfs-branch-fork --dir FIXTURE --tmp SCRATCH --tier 100 [--forks 20]

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { round1 } from '../lib/cell.js';
import { median, percentile, storeFiles } from '../lib/measure.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';
import { Client } from '../../lib/sdk/index.js';

const FORK_OPTIONS = {
  forks: { type: 'string', default: '20' },
} as const;

/** Forks take well under a millisecond: keep microseconds. */
const r3 = (ms: number) => Math.round(ms * 1000) / 1000;

async function measureFork(a: Given<typeof FORK_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const forks = Math.max(1, Number(a.forks));
  const storePath = path.join(path.resolve(a.tmp), 'bench.layerfs');
  // initMs covers Client.create + initLayerStack, as in init_namespace.
  const t0 = performance.now();
  const c0 = Client.create(storePath);
  let init;
  let initMs;
  try {
    init = await c0.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
    initMs = performance.now() - t0;
  } finally {
    await c0.close();
  }
  const layerId = init.layer.id;
  // Reconnect after a close (which checkpoints the WAL), so Store bytes before/after the forks
  // compare checkpointed files.
  const filesBefore = storeFiles(storePath);
  const c = Client.connect(storePath);
  try {
    const before = c.info();

    const forkMs: number[] = [];
    let last: { id: string; headCommitId: string | null } | undefined;
    for (let i = 0; i < forks; i++) {
      const t = performance.now();
      last = c.forkBranch({ name: `fork-${i}`, layer: layerId });
      forkMs.push(performance.now() - t);
    }
    if (last === undefined || typeof last.id !== 'string') throw new Error('forkBranch returned no BranchInfo');
    if (last.headCommitId !== null) throw new Error(`a fresh fork has headCommitId ${String(last.headCommitId)}, expected null`);

    const after = c.info();
    await c.close();
    const filesAfter = storeFiles(storePath);
    return {
      ms: r3(median(forkMs)),
      forks,
      minMs: r3(Math.min(...forkMs)),
      p90Ms: r3(percentile(forkMs, 90)),
      maxMs: r3(Math.max(...forkMs)),
      firstMs: r3(forkMs[0]!),
      forksMs: forkMs.map(r3),
      initMs: round1(initMs),
      objects: before.objects,
      objectsAddedByForks: after.objects - before.objects,
      storeBytes: filesAfter.bytes,
      storeBytesAddedByForks: filesAfter.bytes - filesBefore.bytes,
    };
  } catch (err) {
    await c.close();
    throw err;
  }
}

export const branchFork = defineCell({
  file: import.meta.url,
  id: 'layerfs-branch-fork',
  tool: 'layerfs',
  args: FORK_OPTIONS,
  required: ['dir', 'tmp'],
  run: measureFork,
});

runIfMain(import.meta.url, branchFork);
