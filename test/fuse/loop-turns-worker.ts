// The thread of test/fuse/loop-turns.test.ts: answers "requests" (a started run, waited for) in a
// synchronous loop as a mount's reader thread does, collecting garbage now and then, with or
// without giving its event loop turns (lib/fuse/loop-turns.ts); posts how many runs are alive.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { DOMAIN, objectId, RUN_FIELDS, RunCodec, runTasksAlive, startRun } from '../../lib/native/index.js';
import { LoopTurns } from '../../lib/fuse/loop-turns.js';

if (isMainThread) {
  // `node --expose-gc loop-turns-worker.ts REQUESTS TURNS`: runs itself as a worker, prints its count.
  // Node 20 workers do not inherit module hooks: the thread registers tsx itself (as kernel-spare.ts does).
  const code = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); })`;
  const w = new Worker(code, { eval: true, workerData: { requests: Number(process.argv[2]), turns: process.argv[3] === 'turns' } });
  w.on('message', (m) => console.log(JSON.stringify(m)));
  await new Promise((resolve, reject) => w.on('exit', resolve).on('error', reject));
  process.exit(0);
}
const { requests, turns: withTurns } = workerData as { requests: number; turns: boolean };
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const chunk = Buffer.alloc(4096, 7);
const spec = new Float64Array([0, chunk.length, RunCodec.Raw, 0, chunk.length]);
const ids = objectId(DOMAIN.chunk, chunk);
if (spec.length !== RUN_FIELDS) throw new Error('spec shape');
const turns = new LoopTurns();
const before = runTasksAlive();
for (let i = 0; i < requests; i++) {
  const ok = new Uint8Array(1);
  startRun(chunk, spec, ids, null, ok, 1).wait();
  if (ok[0] !== 1) throw new Error('the chunk did not verify');
  if (i % 100 === 99) gc();
  if (withTurns && turns.count()) await turns.turn();
}
gc();
if (withTurns) await turns.turn();
parentPort!.postMessage({ alive: runTasksAlive() - before });
