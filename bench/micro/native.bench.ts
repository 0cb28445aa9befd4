// Micro-benchmarks of the native addon, with node:crypto SHA-256 measured in the same run as the
// yardstick. `node --import tsx bench/micro/native.bench.ts [--quick]` prints a table;
// bench/cells/native.ts imports runNativeBench() and records the figures.
//
// Goals (single core): chunker ≥ 2.5 GB/s on 256 MiB of random bytes, chunk+hash ≥ 1.5 GB/s.

import { createHash, randomFillSync } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Bench } from 'tinybench';
import { blake3, Chunker, chunkAndHash, chunkLengths, hashBuffers, nativeInfo, objectId, DOMAIN } from '../../lib/native/index.js';

const MiB = 1024 * 1024;

interface Row {
  name: string;
  bytes: number;
  ms: number;
}

/** Median latency (ms) of each task; `iterations` runs after one warm-up run. */
async function measure(iterations: number, tasks: Record<string, () => unknown | Promise<unknown>>): Promise<Record<string, number>> {
  const bench = new Bench({ iterations, time: 1, warmupIterations: 1, warmupTime: 1, throws: true });
  for (const [name, fn] of Object.entries(tasks)) bench.add(name, fn);
  await bench.run();
  const out: Record<string, number> = {};
  for (const t of bench.tasks) {
    const r = t.result;
    if (r.state !== 'completed') throw new Error(`${t.name}: ${r.state}`);
    out[t.name] = r.latency.p50;
  }
  return out;
}

const gbps = (bytes: number, ms: number): number => bytes / (ms / 1000) / 1e9;
const round = (x: number, digits = 3): number => Number(x.toFixed(digits));

export async function runNativeBench({ quick = false }: { quick?: boolean } = {}): Promise<Record<string, number>> {
  // Quick runs (CI smoke, `npm run bench -- --quick`) stay small: a few seconds on a loaded machine.
  const bigSize = (quick ? 16 : 256) * MiB;
  const big = randomFillSync(Buffer.allocUnsafe(bigSize));
  const oneMiB = big.subarray(0, MiB);
  const small = big.subarray(0, 64);
  const batch = Array.from({ length: quick ? 4 : 64 }, (_, i) => big.subarray((i * 4 * MiB) % (bigSize - 4 * MiB), ((i * 4 * MiB) % (bigSize - 4 * MiB)) + 4 * MiB));
  const batchBytes = batch.length * 4 * MiB;
  // Medians of several runs: the machine is shared, and single runs swing by ±30%.
  const reps = quick ? 5 : 9;

  const sha = (b: Uint8Array): Buffer => createHash('sha256').update(b).digest();
  const oneMiBTimes = await measure(quick ? 10 : 50, {
    'blake3 1 MiB': () => blake3(oneMiB),
    'sha256 1 MiB': () => sha(oneMiB),
  });
  // tinybench times every call; 1000 calls per sample keep its own overhead out of the figure.
  const SMALL_CALLS = 1000;
  const smallTimes = await measure(quick ? 30 : 400, {
    'objectId 64 B': () => {
      for (let i = 0; i < SMALL_CALLS; i++) objectId(DOMAIN.blob, small);
    },
    'blake3 64 B': () => {
      for (let i = 0; i < SMALL_CALLS; i++) blake3(small);
    },
    'sha256 64 B': () => {
      for (let i = 0; i < SMALL_CALLS; i++) sha(small);
    },
  });
  const bigTimes = await measure(reps, {
    chunker: () => chunkLengths(big),
    'chunker streaming 1 MiB pushes': () => {
      const c = new Chunker();
      for (let at = 0; at < big.length; at += MiB) c.push(big.subarray(at, at + MiB));
      return c.finish();
    },
    'chunk+hash': () => chunkAndHash(big),
  });
  const poolTimes = await measure(reps, {
    'hashBuffers threads=1': () => hashBuffers(batch, { threads: 1 }),
    'hashBuffers threads=2': () => hashBuffers(batch, { threads: 2 }),
  });

  const shaGbps = gbps(MiB, oneMiBTimes['sha256 1 MiB']!);
  const rows: Row[] = [
    { name: 'blake3 1 MiB', bytes: MiB, ms: oneMiBTimes['blake3 1 MiB']! },
    { name: 'sha256 1 MiB', bytes: MiB, ms: oneMiBTimes['sha256 1 MiB']! },
    { name: `chunker ${bigSize / MiB} MiB`, bytes: bigSize, ms: bigTimes.chunker! },
    { name: `chunker streaming ${bigSize / MiB} MiB`, bytes: bigSize, ms: bigTimes['chunker streaming 1 MiB pushes']! },
    { name: `chunk+hash ${bigSize / MiB} MiB`, bytes: bigSize, ms: bigTimes['chunk+hash']! },
    { name: `hashBuffers ${batch.length}×4 MiB t=1`, bytes: batchBytes, ms: poolTimes['hashBuffers threads=1']! },
    { name: `hashBuffers ${batch.length}×4 MiB t=2`, bytes: batchBytes, ms: poolTimes['hashBuffers threads=2']! },
  ];
  const results: Record<string, number> = {
    blake3_1mib_gbps: round(gbps(MiB, oneMiBTimes['blake3 1 MiB']!)),
    sha256_1mib_gbps: round(shaGbps),
    chunker_gbps: round(gbps(bigSize, bigTimes.chunker!)),
    chunker_stream_gbps: round(gbps(bigSize, bigTimes['chunker streaming 1 MiB pushes']!)),
    chunk_hash_gbps: round(gbps(bigSize, bigTimes['chunk+hash']!)),
    hashbuffers_t1_gbps: round(gbps(batchBytes, poolTimes['hashBuffers threads=1']!)),
    hashbuffers_t2_gbps: round(gbps(batchBytes, poolTimes['hashBuffers threads=2']!)),
    objectid_64b_ns: round((smallTimes['objectId 64 B']! * 1e6) / SMALL_CALLS, 1),
    blake3_64b_ns: round((smallTimes['blake3 64 B']! * 1e6) / SMALL_CALLS, 1),
    sha256_64b_ns: round((smallTimes['sha256 64 B']! * 1e6) / SMALL_CALLS, 1),
  };
  results.blake3_vs_sha256 = round(results.blake3_1mib_gbps! / shaGbps, 2);
  results.chunker_vs_sha256 = round(results.chunker_gbps! / shaGbps, 2);
  results.chunk_hash_vs_sha256 = round(results.chunk_hash_gbps! / shaGbps, 2);
  results.hashbuffers_t2_vs_t1 = round(results.hashbuffers_t2_gbps! / results.hashbuffers_t1_gbps!, 2);
  lastRows = rows;
  lastShaGbps = shaGbps;
  return results;
}

let lastRows: Row[] = [];
let lastShaGbps = 0;

function printTable(results: Record<string, number>): void {
  const info = nativeInfo();
  const lines = [`layerfs native micro-benchmarks (BLAKE3 ${info.blake3Version} ${info.simd}, ${info.threads} threads)`];
  const pad = (s: string, n: number): string => s.padEnd(n);
  lines.push(`${pad('task', 32)} ${'median ms'.padStart(10)} ${'GB/s'.padStart(7)} ${'×sha256'.padStart(8)}`);
  for (const r of lastRows) {
    const g = gbps(r.bytes, r.ms);
    lines.push(`${pad(r.name, 32)} ${r.ms.toFixed(2).padStart(10)} ${g.toFixed(2).padStart(7)} ${(g / lastShaGbps).toFixed(2).padStart(8)}`);
  }
  lines.push(
    `64-byte inputs: objectId ${results.objectid_64b_ns} ns/call, blake3 ${results.blake3_64b_ns} ns/call, ` +
      `node:crypto sha256 ${results.sha256_64b_ns} ns/call`,
  );
  lines.push(`hashBuffers threads=2 / threads=1: ${results.hashbuffers_t2_vs_t1}×`);
  const goal = (label: string, value: number, target: number): string => `${label} ${value.toFixed(2)} GB/s (goal ≥ ${target}): ${value >= target ? 'met' : 'MISSED'}`;
  lines.push(goal('chunker', results.chunker_gbps!, 2.5));
  lines.push(goal('chunk+hash', results.chunk_hash_gbps!, 1.5));
  process.stdout.write(lines.join('\n') + '\n');
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (invokedDirectly) {
  const results = await runNativeBench({ quick: process.argv.includes('--quick') });
  printTable(results);
}
