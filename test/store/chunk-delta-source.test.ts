/**
 * Which new chunks of a changed large file are offered delta bases (lib/store/chunk-delta.ts):
 * each one until GIVE_UP_AFTER trials in a row did not pay; then, in a file where none ever
 * paid, no more, and in one where some did, every PROBE_EVERY-th chunk, until a probe pays.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChunkDeltaSource, GIVE_UP_AFTER, PROBE_EVERY } from '../../lib/store/chunk-delta.js';

const LEN = 16 * 1024;

function id(n: number, tag: number): Buffer {
  const b = Buffer.alloc(32);
  b.writeUInt32LE(n, 0);
  b.writeUInt32LE(tag, 4);
  return b;
}

/** A source over an old file of `chunks` chunks; the new file is as long, every chunk new. */
function source(chunks: number): ChunkDeltaSource {
  return new ChunkDeltaSource(Array.from({ length: chunks }, (_, i) => ({ id: id(i, 1), length: LEN })), chunks * LEN);
}

/** Offers chunk `i` of the new file; true if it got bases, judged with `kept`. */
function offer(src: ChunkDeltaSource, i: number, kept: boolean): boolean {
  const bases = src.next(id(i, 2), LEN, true);
  if (!bases || bases.length === 0) return false;
  src.result(kept);
  return true;
}

test(`a file whose deltas never paid gives up after ${GIVE_UP_AFTER} misses`, () => {
  const src = source(200);
  let tried = 0;
  for (let i = 0; i < 200; i++) if (offer(src, i, false)) tried++;
  assert.equal(tried, GIVE_UP_AFTER);
  assert.equal(src.active, false);
});

test(`a file whose deltas paid earlier probes every ${PROBE_EVERY}th chunk after ${GIVE_UP_AFTER} misses, and resumes on a hit`, () => {
  const src = source(400);
  assert.equal(offer(src, 0, true), true);
  const tried: number[] = [];
  for (let i = 1; i <= 200; i++) if (offer(src, i, false)) tried.push(i);
  // GIVE_UP_AFTER misses in a row (chunks 1…GIVE_UP_AFTER), then one probe per PROBE_EVERY chunks.
  const probes = Math.floor((200 - GIVE_UP_AFTER) / PROBE_EVERY);
  assert.equal(tried.length, GIVE_UP_AFTER + probes);
  assert.deepEqual(tried.slice(GIVE_UP_AFTER, GIVE_UP_AFTER + 3), [1, 2, 3].map((k) => GIVE_UP_AFTER + k * PROBE_EVERY));
  // The next probe pays: every chunk is tried again.
  let i = 201;
  while (!offer(src, i, true)) i++;
  assert.equal((i - GIVE_UP_AFTER) % PROBE_EVERY, 0, `chunk ${i} is a probe`);
  for (let k = 1; k <= 10; k++) assert.equal(offer(src, i + k, false), true, `chunk ${i + k} is tried after the probe paid`);
});
