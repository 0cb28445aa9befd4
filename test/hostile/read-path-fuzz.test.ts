// The read-path mutation harness (test/helpers/read-path-fuzz.ts), briefly: forged states made
// by mutating a real state's objects (ids kept, as a forger re-hashing everything would) must
// give typed errors only, exact read sizes, no export residue, and a verify that finds what the
// read path refuses. Long runs: docs/FUZZING.md. Seed: LAYERFS_FUZZ_SEED (printed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDecoderFuzz, runReadPathFuzz } from '../helpers/read-path-fuzz.js';

const SEED = Number(process.env.LAYERFS_FUZZ_SEED ?? Date.now() % 100_000);

test(`read path over mutated forged states (seed ${SEED})`, { timeout: 300_000 }, async () => {
  console.log(`read-path fuzz seed ${SEED}`);
  const s = await runReadPathFuzz({ seed: SEED, execs: 1500, exportEvery: 50 });
  console.log(JSON.stringify({ ...s, findings: s.findings.length }));
  assert.deepEqual(s.findings, [], `seed ${SEED}`);
  assert.ok(s.verifyClean > 0 && s.exports > 0);
});

test(`decoders over mutated objects (seed ${SEED})`, { timeout: 300_000 }, async () => {
  const s = await runDecoderFuzz({ seed: SEED, execs: 30_000 });
  assert.deepEqual(s.findings, [], `seed ${SEED}`);
});
