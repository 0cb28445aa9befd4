// Cell: --workers Workspaces developed at the same time by separate processes. Setup (untimed):
// import the tree, fork one Branch per worker from the genesis Layer, a materialized Workspace
// each, close (checkpoints the WAL). Then one worker process per Workspace (lib/ws-worker.ts): each
// connects, warms up with a no-op commit, and on the common start signal makes --commits commits
// of 10 edited files. `ms` is the wall time from the start signal to the last worker's end; the
// rest is per commit (commitWorkspace alone) and summed receipts. Afterwards (untimed): every
// Branch has --commits Commits, and Store file + WAL after close minus before.
//   node --import tsx bench/cells/multi_workspace_development.ts --cell layerfs-multi-ws --dir FIXTURE --tmp SCRATCH --tier 2 --files 1000 --workers 2 --commits 20

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { MULTI_WS_OPTIONS } from '../lib/args.js';
import { r1, storeFiles } from '../lib/measure.js';
import { runWorkers, summarize } from '../lib/ws-parallel.js';
import { copyTree } from '../fixtures/copy.js';
import { duBytes } from '../lib/cell.js';
import { git, gitEnvPlain, gitInitCommit } from '../lib/git.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';
import { Client } from '../../lib/sdk/index.js';

async function layerfsMultiWs(a: Given<typeof MULTI_WS_OPTIONS, 'dir' | 'tmp' | 'files'>): Promise<CellResult> {
  const tmp = path.resolve(a.tmp);
  const n = Number(a.workers);
  const commits = Number(a.commits);
  const storePath = path.join(tmp, 'bench.layerfs');
  let t = performance.now();
  let c = Client.create(storePath);
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

  c = Client.connect(storePath);
  const checks: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    const len = c.log(`w${i}`).length;
    checks[`log w${i}`] = len === commits ? 'ok' : `FAILED: ${len} Commits, expected ${commits}`;
  }
  const info = c.info();
  await c.close();
  const after = storeFiles(storePath);
  const s = summarize(wallMs, results);
  return {
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
  };
}

// Cell: the git peer of layerfs-multi-ws. Setup (untimed): copy the fixture into SCRATCH/main,
// `git init && git add -A && git commit`, one `git worktree add -b wI` per worker. Then one worker
// process per worktree (lib/ws-worker.ts --tool git), all started together, each making --commits
// commits of the same edits as layerfs (`git commit -a`, each timed as one process). `ms` is the
// wall time from the start signal to the last worker's end; growth is `du -sb .git`.
//   node --import tsx bench/cells/multi_workspace_development.ts --cell git-multi-ws --dir FIXTURE --tmp SCRATCH --tier 2 --files 1000 --workers 2 --commits 20
async function gitMultiWs(a: Given<typeof MULTI_WS_OPTIONS, 'dir' | 'tmp' | 'files'>): Promise<CellResult> {
  const tmp = path.resolve(a.tmp);
  const n = Number(a.workers);
  const commits = Number(a.commits);
  const main = path.join(tmp, 'main');
  const env = gitEnvPlain();
  copyTree(path.resolve(a.dir), main);
  const initMs = gitInitCommit(env, main);
  const dirs: string[] = [];
  for (let i = 0; i < n; i++) {
    dirs.push(path.join(tmp, `w${i}`));
    git(['worktree', 'add', '-q', '-b', `w${i}`, dirs[i]!], env, main);
  }
  const gitDir = path.join(main, '.git');
  const before = duBytes(gitDir);
  const { wallMs, results } = await runWorkers((i) => ['--tool', 'git', '--path', dirs[i]!, '--files', a.files!, '--commits', String(commits)], n);
  const checks: Record<string, string> = {};
  for (let i = 0; i < n; i++) {
    const len = Number(git(['rev-list', '--count', `w${i}`], env, main).trim()) - 1;
    checks[`log w${i}`] = len === commits ? 'ok' : `FAILED: ${len} commits, expected ${commits}`;
  }
  const after = duBytes(gitDir);
  const s = summarize(wallMs, results);
  return {
    ...s,
    initMs: r1(initMs),
    fileGrowth: after - before,
    storeBytes: after,
    // The workers are Node processes running git as children: their RSS is not git's.
    maxRssMiB: undefined,
    checks,
  };
}

export const multiWorkspace = defineCell({
  file: import.meta.url,
  id: 'layerfs-multi-ws',
  tool: 'layerfs',
  args: MULTI_WS_OPTIONS,
  required: ['dir', 'tmp', 'files'],
  run: layerfsMultiWs,
  peers: [{ id: 'git-multi-ws', tool: 'git', run: gitMultiWs }],
});

runIfMain(import.meta.url, multiWorkspace);
