// Worker process of the multi-Workspace cells (layerfs-multi-ws, git-multi-ws); not a cell. One
// worker develops on one Branch / worktree: it connects, warms up, prints {"ready":true}, waits for
// a line on stdin (the parent's start signal, sent when every worker is ready, so that all loops
// run at the same time), then makes --commits commits, each editing 10 files (devEdit, seeded per
// worker and commit), and prints one JSON line with its figures.
//   layerfs: node --import tsx bench/lib/ws-worker.ts --tool layerfs --store S --ws ID --path DIR --files N --commits C --worker I
//   git:     node --import tsx bench/lib/ws-worker.ts --tool git --path WORKTREE --files N --commits C --worker I

import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { Client } from '../../lib/sdk/index.js';
import { devEdit } from './file-ops.js';
import { gitEnvPlain, gitQuick } from './git.js';
import { semanticOf } from './measure.js';

const { values: a } = parseArgs({
  options: {
    tool: { type: 'string' },
    store: { type: 'string' },
    ws: { type: 'string' },
    path: { type: 'string' },
    files: { type: 'string' },
    commits: { type: 'string' },
    worker: { type: 'string' },
  },
});

const MAX_TRIES = 5;

function out(x: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(x) + '\n');
}

async function waitForStart(): Promise<void> {
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise<void>((resolve, reject) => {
    rl.once('line', () => resolve());
    rl.once('close', () => reject(new Error('stdin closed before the start signal')));
  });
  rl.close();
}

try {
  const files = Number(a.files);
  const commits = Number(a.commits);
  const worker = Number(a.worker);
  const dir = a.path!;
  let c: Client | undefined;
  const env = gitEnvPlain();
  if (a.tool === 'layerfs') {
    c = Client.connect(a.store!);
    const noop = await c.commitWorkspace(a.ws!);
    if (noop.outcome !== 'UpToDate') throw new Error(`worker ${worker}: no-op commit outcome ${noop.outcome}`);
  } else if (a.tool !== 'git') {
    throw new Error(`--tool must be layerfs or git, not ${String(a.tool)}`);
  }
  out({ ready: true, worker });
  await waitForStart();

  const commitMs: number[] = [];
  const outcomes: Record<string, number> = {};
  const errors: string[] = [];
  let retries = 0;
  let semantic = 0;
  let allocated = 0;
  let changedBytes = 0;
  const loop0 = performance.now();
  for (let j = 0; j < commits; j++) {
    const seed = 10_000 * (worker + 1) + j;
    changedBytes += devEdit(dir, files, seed, 1_700_002_000 + j).changedBytes;
    for (let attempt = 1; ; attempt++) {
      try {
        if (c) {
          const t = performance.now();
          const r = await c.commitWorkspace(a.ws!);
          const ms = performance.now() - t;
          outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
          if (r.outcome !== 'Created') throw new Error(`commit ${j}: outcome ${r.outcome}`);
          commitMs.push(ms);
          semantic += semanticOf(r) ?? 0;
          allocated += r.allocatedGrowth ?? 0;
        } else {
          commitMs.push(gitQuick(['commit', '-a', '-q', '-m', `w${worker} ${j}`], env, dir));
          outcomes.Created = (outcomes.Created ?? 0) + 1;
        }
        break;
      } catch (err) {
        const msg = err instanceof Error ? err.message.split('\n')[0]! : String(err);
        if (errors.length < 5) errors.push(msg);
        if (attempt >= MAX_TRIES) throw new Error(`worker ${worker}, commit ${j}: ${attempt} failed attempts; last: ${msg}`);
        retries++;
      }
    }
  }
  const loopMs = performance.now() - loop0;
  if (c) c.close();
  out({ worker, commitMs, loopMs, outcomes, errors, retries, semantic, allocated, changedBytes, maxRssMiB: process.resourceUsage().maxRSS / 1024 });
} catch (err) {
  out({ worker: Number(a.worker), error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
}
