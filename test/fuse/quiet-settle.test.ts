// The quiet-spell settle's bookkeeping (lib/fuse/quiet-settle.ts): the serving thread's count, the
// controller's watch, and the check that the mount is still quiet when the thread gets the ask.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SETTLE_BURST_REQUESTS, SETTLE_QUIET_MS } from '../../lib/fuse/budget.js';
import { Activity, activityCells, countRequest, QuietWatch, settledNow, stillQuiet } from '../../lib/fuse/quiet-settle.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('the serving thread settles only when at most the ask\'s own wake-up came since the controller looked', () => {
  const cells = activityCells();
  for (let i = 0; i < 10; i++) countRequest(cells);
  countRequest(cells); // the wake-up that carries the ask
  assert.equal(stillQuiet(cells, 10), true);
  countRequest(cells);
  assert.equal(stillQuiet(cells, 10), false, 'a request besides the wake-up came');
  assert.equal(Atomics.load(cells, Activity.SettledAt), 0, 'asking records nothing');
  settledNow(cells);
  assert.equal(Atomics.load(cells, Activity.SettledAt), 12, 'a settle records the count');
});

test('the count wraps without a spurious burst or a missed one', () => {
  const cells = activityCells();
  Atomics.store(cells, Activity.Requests, 2 ** 31 - 1);
  settledNow(cells);
  countRequest(cells);
  countRequest(cells);
  assert.equal(Atomics.load(cells, Activity.Requests), -(2 ** 31) + 1);
  assert.equal(stillQuiet(cells, 2 ** 31 - 1 + 1 - 2 ** 32), true, 'one request since, across the wrap');
});

test('the controller asks once per quiet spell after a burst, never after a trickle or while it waits for an answer', { timeout: 30_000 }, async () => {
  const cells = activityCells();
  const asked: number[] = [];
  let busy = false;
  const watch = new QuietWatch(cells, (seen) => asked.push(seen), () => busy);
  try {
    // A trickle: fewer requests than a burst, then quiet.
    for (let i = 0; i < SETTLE_BURST_REQUESTS - 1; i++) countRequest(cells);
    await sleep(SETTLE_QUIET_MS * 1.6);
    assert.deepEqual(asked, []);
    // The burst's last request, then quiet while the controller waits for an answer: no ask.
    countRequest(cells);
    busy = true;
    await sleep(SETTLE_QUIET_MS * 1.6);
    assert.deepEqual(asked, []);
    // No longer waiting: one ask, with the count it saw; the quiet spell goes on without another.
    busy = false;
    await sleep(SETTLE_QUIET_MS * 0.6);
    assert.deepEqual(asked, [SETTLE_BURST_REQUESTS]);
    await sleep(SETTLE_QUIET_MS * 1.6);
    assert.deepEqual(asked, [SETTLE_BURST_REQUESTS]);
  } finally {
    watch.stop();
  }
});
