// Cell: one large file — import it, read it back whole, then random 4 KiB reads.
//   import   Client.create + initLayerStack(FIXTURE)                      → ms (importMs)
//   close    checkpoint; reconnect
//   read     for (piece of client.readFile(layer, 'large.bin'))          → readMs
//   random   --reads range reads of 4 KiB at seeded offsets: client.readFile(layer, FILE, { offset,
//            length: 4096 }), which loads only the chunks that overlap the range.
//   floor    the same offsets read with pread(2) from the fixture file (page cache, no Store).
// Every random read is checked against the fixture (untimed).
//   node --import tsx bench/cells/layerfs-payload.ts --dir FIXTURE --tmp SCRATCH --tier "10 MiB" [--reads 1000]

import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { emit, fail, selfMaxRssMiB } from '../lib/cell.js';
import { Rng } from '../lib/prng.js';
import { loadCampaignSdk, mbps, median, percentile, r1, r3, semanticOf, storeFiles } from './_campaign.js';

const CELL = 'layerfs-payload';
const FILE = 'large.bin';
const READ = 4096;
const { values: a } = parseArgs({
  options: {
    dir: { type: 'string' },
    tmp: { type: 'string' },
    tier: { type: 'string', default: '?' },
    reads: { type: 'string', default: '1000' },
  },
});
const tier = a.tier!;

try {
  if (a.dir === undefined || a.tmp === undefined) throw new Error('--dir and --tmp are required');
  const dir = path.resolve(a.dir);
  const fixtureFile = path.join(dir, FILE);
  const storePath = path.join(path.resolve(a.tmp), 'bench.layerfs');
  const sdk = await loadCampaignSdk();

  let t = performance.now();
  let c = sdk.Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: dir });
  const importMs = performance.now() - t;
  const rssAfterImportMiB = r1(selfMaxRssMiB());
  await c.close();
  const files = storeFiles(storePath);
  c = sdk.Client.connect(storePath);
  const ref = init.layer.id;

  // Full read, streamed.
  t = performance.now();
  let readBytes = 0;
  let pieces = 0;
  for (const piece of c.readFile(ref, FILE)) {
    readBytes += piece.length;
    pieces++;
  }
  const readMs = performance.now() - t;
  const rssAfterReadMiB = r1(selfMaxRssMiB());

  // Random 4 KiB range reads.
  t = performance.now();
  const size = c.stat(ref, FILE).size;
  const statMs = performance.now() - t;
  if (size !== readBytes) throw new Error(`stat says ${size} bytes, the full read gave ${readBytes}`);
  const reads = Math.max(1, Number(a.reads));
  const rng = new Rng(1, 0x4ead);
  const offsets = Array.from({ length: reads }, () => rng.below(size - READ + 1));
  const out = Buffer.alloc(READ);
  const readMsEach: number[] = [];
  let streamed = 0;
  const fd = fs.openSync(fixtureFile, 'r');
  const want = Buffer.alloc(READ);
  try {
    for (const off of offsets) {
      const t1 = performance.now();
      let got = 0;
      for (const piece of c.readFile(ref, FILE, { offset: off, length: READ })) got += piece.copy(out, got);
      streamed += got;
      readMsEach.push(performance.now() - t1);
      fs.readSync(fd, want, 0, READ, off);
      if (got !== READ || !out.equals(want)) throw new Error(`random read at ${off}: ${got} bytes, ${out.equals(want) ? 'equal' : 'different'} content`);
    }
    // The floor: pread(2) of the same offsets from the (cached) fixture file.
    const t2 = performance.now();
    for (const off of offsets) fs.readSync(fd, want, 0, READ, off);
    const floorMs = performance.now() - t2;
    const info = c.info();
    await c.close();

    const randomTotal = readMsEach.reduce((s, x) => s + x, 0);
    emit({
      cell: CELL,
      tier,
      ms: r1(importMs),
      files: 1,
      bytes: size,
      importMBps: mbps(size, importMs),
      readMs: r1(readMs),
      readMBps: mbps(readBytes, readMs),
      readPieces: pieces,
      statMs: r3(statMs),
      randomReads: reads,
      randomTotalMs: r1(randomTotal),
      randomMedianMs: r3(median(readMsEach)),
      randomP90Ms: r3(percentile(readMsEach, 90)),
      randomPerS: r1(reads / (randomTotal / 1000)),
      streamedPerRead: Math.round(streamed / reads),
      floorMedianMs: r3(floorMs / reads),
      semanticGrowth: semanticOf(init),
      allocatedGrowth: init.allocatedGrowth,
      objectsInserted: init.objectsInserted,
      objects: info.objects,
      storeBytes: files.bytes,
      // Peak RSS so far after the import and after the full read (maxRssMiB is after everything).
      rssAfterImportMiB,
      rssAfterReadMiB,
      receiptMs: init.ms !== undefined ? r1(init.ms) : undefined,
      phases: init.phases,
    });
  } finally {
    fs.closeSync(fd);
  }
} catch (err) {
  fail(CELL, tier, err);
}
