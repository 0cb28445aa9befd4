/** A worker thread running one shard of the status model (status-model.test.ts). */
import { parentPort, workerData } from 'node:worker_threads';
import { runModel, type Projection } from './status-model-run.js';

const { projection, seed, scripts } = workerData as { projection: Projection; seed: number; scripts: number };
const t0 = performance.now();
// The test cleans up after a shard it had to stop (a timeout): its Store's daemon and mount.
runModel(projection, seed, scripts, (dir) => parentPort!.postMessage({ started: dir })).then(
  () => parentPort!.postMessage({ ok: true, ms: Math.round(performance.now() - t0) }),
  (e: unknown) => parentPort!.postMessage({ ok: false, message: e instanceof Error ? e.message : String(e) }),
);
