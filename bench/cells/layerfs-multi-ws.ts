// Cell: --workers Workspaces developed at the same time by separate processes. Setup (untimed):
// import the tree, fork one Branch per worker from the genesis Layer, a materialized Workspace
// each, close (checkpoints the WAL). Then one worker process per Workspace (_ws-worker.ts): each
// connects, warms up with a no-op commit, and on the common start signal makes --commits commits
// of 10 edited files. `ms` is the wall time from the start signal to the last worker's end; the
// rest is per commit (commitWorkspace alone) and summed receipts. Afterwards (untimed): every
// Branch has --commits Commits, and Store file + WAL after close minus before.
//   node --import tsx bench/cells/layerfs-multi-ws.ts --dir FIXTURE --tmp SCRATCH --tier 2 --files 1000 --workers 2 --commits 20

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cellArgs, requireArgs, MULTI_WS_OPTIONS } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { loadCampaignSdk, r1, storeFiles } from './_campaign.js';
import { runWorkers, summarize } from './_ws-parallel.js';

const CELL = 'layerfs-multi-ws';
const a = cellArgs(MULTI_WS_OPTIONS);
const tier = a.tier!;

try {
  requireArgs(a, ['dir', 'tmp', 'files']);
  const tmp = path.resolve(a.tmp);
  const n = Number(a.workers);
  const commits = Number(a.commits);
  const storePath = path.join(tmp, 'bench.layerfs');
  const sdk = await loadCampaignSdk();
  let t = performance.now();
  let c = sdk.Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
  const initMs = performance.now() - t;
  t = performance.now();
  const wss: { id: string; path: string }[] = [];
  for (let i = 0; i < n; i++) {
    c.forkBranch({ name: `w${i}`, layer: init.layer.id });
    wss.push(await c.createWorkspace(`w${i}`, { at: path.join(tmp, `ws${i}`) }));
  }
  const setupMs = performance.now() - t;
  await c.close();
  const before = storeFiles(storePath);

  const { wallMs, results } = await runWorkers(
    (i) => ['--tool', 'layerfs', '--store', storePath, '--ws', wss[i]!.id, '--path', wss[i]!.path, '--files', a.files!, '--commits', String(commits)],
    n,
  );

  c = sdk.Client.connect(storePath);
  const checks: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    const len = c.log(`w${i}`).length;
    checks[`log w${i}`] = len === commits ? 'ok' : `FAILED: ${len} Commits, expected ${commits}`;
  }
  const info = c.info();
  await c.close();
  const after = storeFiles(storePath);
  const s = summarize(wallMs, results);
  emit({
    cell: CELL,
    tier,
    ...s,
    initMs: r1(initMs),
    setupMs: r1(setupMs),
    semanticGrowth: results.reduce((acc, r) => acc + r.semantic, 0),
    allocatedGrowth: results.reduce((acc, r) => acc + r.allocated, 0),
    fileGrowth: after.bytes - before.bytes,
    objects: info.objects,
    storeBytes: after.bytes,
    maxRssMiB: s.workerMaxRssMiB as number,
    checks,
  });
} catch (err) {
  fail(CELL, tier, err);
}
