/**
 * Dictionary training on a worker thread (lib/native/zstd-train-thread.ts): the same samples give
 * the same dictionary as a call on this thread, and the result is taken without the event loop
 * (poll until it is there, then wait returns it at once). Samples are generated from a seed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BackgroundTraining, zstdTrainDictionary } from '../../lib/native/index.js';
import { trainingSamples } from './helpers.js';

const SEED = 7;

test(`a dictionary trained on a worker thread is the one trained on this thread (seed ${SEED})`, { timeout: 120_000 }, () => {
  const { data, sizes } = trainingSamples(SEED);
  const here = zstdTrainDictionary(data, sizes, 32 * 1024, 1000);
  if (here === null) return; // no ZDICT on this system: nothing trains anywhere
  const job = new BackgroundTraining(data, sizes, 32 * 1024, 1000);
  let polled: Buffer | null | undefined;
  const until = Date.now() + 60_000;
  while ((polled = job.poll()) === undefined && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
  assert.ok(polled, 'the worker trained a dictionary');
  assert.ok(polled.equals(here));
  assert.ok(job.wait()!.equals(here));
  // Waiting without polling first gives the same bytes too.
  assert.ok(new BackgroundTraining(data, sizes, 32 * 1024, 1000).wait()!.equals(here));
});
