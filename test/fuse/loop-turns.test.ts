// A thread that answers requests in a synchronous loop (a mount's serving and reader threads) lets
// the Node-API finalizers of the addon's objects run only if it gives its event loop turns: Node
// 20 runs them from the loop, not during the collection. Without the turns the daemon's resident
// set grew with every GiB read. A worker like a reader thread starts and waits for runs, collects
// its garbage, and counts the runs not yet finalized, with and without LoopTurns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const worker = fileURLToPath(new URL('./loop-turns-worker.ts', import.meta.url));
const REQUESTS = 5000;

/** Runs the worker in a child node with --expose-gc; the number of its runs left unfinalized. */
function aliveAfter(turns: boolean): number {
  const r = spawnSync(process.execPath, ['--expose-gc', ...nodeArgs(worker, String(REQUESTS), turns ? 'turns' : 'none')], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  return (JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { alive: number }).alive;
}

test('a synchronous request loop that gives its event loop turns lets the finalizers of its runs run', () => {
  const without = aliveAfter(false);
  const withTurns = aliveAfter(true);
  console.log(`runs not finalized after ${REQUESTS}: ${without} without turns, ${withTurns} with them`);
  // With turns, only what the last turns had not yet drained (at most a turn's worth of requests).
  assert.ok(withTurns <= 300, `${withTurns} of ${REQUESTS} runs still hold their wrappers with turns`);
});
