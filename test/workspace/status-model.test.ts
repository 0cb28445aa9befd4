/**
 * Model test of Workspace status and the committed diff: seeded random edit scripts run on a
 * plain directory and on a Workspace of each Projection. After each script the Workspace equals
 * the directory, and status and the diff of the Commit list exactly the paths whose state
 * differs, as an oracle of our own sees it (kinds, modes, mtimes, bytes, targets, link counts,
 * xattrs, empty directories), cross-checked on content by `git diff --name-status --no-renames`
 * (status-model-run.ts, -ops.ts, -oracle.ts).
 *
 * LAYERFS_MODEL_SCRIPTS sets the scripts per Projection (default 2,000), LAYERFS_MODEL_SEED the
 * seed (a fixed one by default; `random` draws one), LAYERFS_MODEL_SHARDS how many Stores (one worker thread each, run at once) share them per
 * Projection. Shard k runs from its own seed, printed on failure with the line that reruns it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { fuseAvailable } from '../../lib/fuse/probe.js';
import { detachStale } from '../../lib/fuse/mounttab.js';
import { stopDaemon } from '../../lib/fuse/index.js';
import { removeTree } from '../../lib/store/remove-tree.js';
import type { Projection } from './status-model-run.js';

const SCRIPTS = Number(process.env.LAYERFS_MODEL_SCRIPTS ?? 2000);
// The gate runs a fixed seed so that a red run names a change, not a draw; `random` explores.
const FIXED_SEED = 888475477;
const seedEnv = process.env.LAYERFS_MODEL_SEED;
const SEED = seedEnv === 'random' ? Date.now() % 0x7fffffff : Number(seedEnv ?? FIXED_SEED);
// Each shard waits on its Workspace (FUSE round trips, syscalls) as much as it computes.
const SHARDS = Math.max(1, Math.min(Number(process.env.LAYERFS_MODEL_SHARDS ?? 2 * availableParallelism()), SCRIPTS));

const WORKER = new URL('./status-model-worker.ts', import.meta.url).href;

/** Shard k's seed; shard 0 runs from the seed itself. */
const shardSeed = (k: number) => (k === 0 ? SEED : (SEED + Math.imul(k, 0x9e3779b1)) >>> 1);
/** The FUSE runs take another stream from the same seed. */
const projectionSeed = (p: Projection, s: number) => (p === 'fuse' ? (s ^ 0x5bd1e995) >>> 0 : s);

/** A shard stopped from outside (the test timed out): its daemon, mount and directory go too. */
async function cleanUp(w: Worker, dir: string | undefined): Promise<void> {
  await w.terminate();
  if (!dir) return;
  await stopDaemon(join(dir, 'store.sqlite'), { discard: true }).catch(() => {});
  await detachStale(join(dir, 'ws')).catch(() => false);
  removeTree(dir);
}

function shard(projection: Projection, k: number, scripts: number, signal: AbortSignal): Promise<{ ms: number }> {
  const seed = shardSeed(k);
  return new Promise((resolve, reject) => {
    // Node 20 workers do not inherit module hooks: the worker registers tsx itself first.
    const code = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${JSON.stringify(WORKER)}); })`;
    const w = new Worker(code, { eval: true, workerData: { projection, seed: projectionSeed(projection, seed), scripts } });
    const rerun = `rerun: LAYERFS_MODEL_SEED=${seed} LAYERFS_MODEL_SHARDS=1 LAYERFS_MODEL_SCRIPTS=${scripts}`;
    let dir: string | undefined;
    const stop = () => void cleanUp(w, dir);
    signal.addEventListener('abort', stop, { once: true });
    w.on('message', (m: { ok: boolean; ms?: number; message?: string; started?: string }) => {
      if (m.started !== undefined) {
        dir = m.started;
        return;
      }
      signal.removeEventListener('abort', stop);
      if (m.ok) resolve({ ms: m.ms! });
      else reject(new assert.AssertionError({ message: `${m.message}\n${rerun}` }));
    });
    w.once('error', (e) => reject(new Error(`${projection} shard ${k} (${rerun}): ${e.message}`)));
    w.once('exit', (code) => reject(new Error(`${projection} shard ${k} exited (${code}) before it answered; ${rerun}`)));
  });
}

async function runShards(projection: Projection, signal: AbortSignal): Promise<void> {
  const t0 = performance.now();
  const per = Array.from({ length: SHARDS }, (_, k) => Math.floor(SCRIPTS / SHARDS) + (k < SCRIPTS % SHARDS ? 1 : 0));
  const results = await Promise.allSettled(per.map((n, k) => shard(projection, k, n, signal)));
  const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed.length) throw failed[0]!.reason;
  console.log(`${projection}: ${SCRIPTS} scripts in ${SHARDS} shards, ${Math.round(performance.now() - t0)} ms`);
}

console.log(`status model seed ${SEED} (LAYERFS_MODEL_SEED=${SEED}), ${SCRIPTS} scripts per Projection, ${SHARDS} shards`);
const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

test(`status model: materialize and fuse at once (${SCRIPTS} scripts each, seed ${SEED})`, { timeout: Number(process.env.LAYERFS_MODEL_TIMEOUT_MS ?? 900_000), concurrency: 2 }, async (t) => {
  await Promise.all([t.test('materialize', (st) => runShards('materialize', st.signal)), t.test('fuse', { skip: fuseSkip }, (st) => runShards('fuse', st.signal))]);
});
