// Cell: one large file — import it, read it back whole, then random 4 KiB reads.
//   import   Client.create + initLayerStack(FIXTURE)                      → ms (importMs)
//   close    checkpoint; reconnect
//   read     for (piece of client.readFile(layer, 'large.bin'))          → readMs
//   random   --reads range reads of 4 KiB at seeded offsets: client.readFile(layer, FILE, { offset,
//            length: 4096 }), which loads only the chunks that overlap the range.
//   floor    the same offsets read with pread(2) from the fixture file (page cache, no Store).
//   command  as a user runs it, after close: `layerfs cat STATE large.bin | cat > /dev/null`
//            (cmdReadMs, once), `layerfs cat --offset N --length 4096 STATE large.bin` (cmdRangeMs)
//            and `layerfs --version` (cmdStartMs), medians of 5; `node -e 0` (nodeMs) is the floor
//            of any Node command.
// Every random read is checked against the fixture (untimed).
//   node --import tsx bench/cells/payload_create_read.ts --cell layerfs-payload --dir FIXTURE --tmp SCRATCH --tier "10 MiB" [--reads 1000]

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { duBytes, selfMaxRssMiB, timeExternal } from '../lib/cell.js';
import { Rng } from '../../test/helpers/random.js';
import { mbps, median, percentile, r1, r3, semanticOf, storeFiles } from '../lib/measure.js';
import { GIT, gitEnv, gitTimed } from '../lib/git.js';
import { layerfsCommand, shellWord } from '../lib/cli-command.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';
import { Client } from '../../lib/sdk/index.js';

const PAYLOAD_OPTIONS = {
  reads: { type: 'string', default: '1000' },
} as const;

const FILE = 'large.bin';
const READ = 4096;

/** The floor: pread(2) of the same offsets from the (cached) fixture file; total ms. */
function preadMs(fd: number, offsets: number[], into: Buffer): number {
  const t = performance.now();
  for (const off of offsets) fs.readSync(fd, into, 0, READ, off);
  return performance.now() - t;
}

/** `layerfs cat` and `layerfs --version` as commands (module loading included), and node's own start. */
function commandFigures(storePath: string, ref: string, offset: number): Record<string, number> {
  const lf = layerfsCommand();
  const cat = [...lf, '--store', storePath, 'cat', ref, FILE];
  const five = (argv: string[]) => r1(median(Array.from({ length: 5 }, () => timeExternal(argv).ms)));
  const full = timeExternal(['sh', '-c', `${cat.map(shellWord).join(' ')} | cat > /dev/null`]);
  return {
    cmdReadMs: r1(full.ms),
    cmdReadRssMiB: r1(full.maxRssMiB),
    cmdRangeMs: five([...lf, '--store', storePath, 'cat', '--offset', String(offset), '--length', String(READ), ref, FILE]),
    cmdStartMs: five([...lf, '--version']),
    nodeMs: five([process.execPath, '-e', '0']),
  };
}

async function layerfsPayload(a: Given<typeof PAYLOAD_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const dir = path.resolve(a.dir);
  const fixtureFile = path.join(dir, FILE);
  const storePath = path.join(path.resolve(a.tmp), 'bench.layerfs');

  let t = performance.now();
  let c = Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: dir });
  const importMs = performance.now() - t;
  const rssAfterImportMiB = r1(selfMaxRssMiB());
  await c.close();
  const files = storeFiles(storePath);
  c = Client.connect(storePath);
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
    const floorMs = preadMs(fd, offsets, want);
    const info = c.info();
    await c.close();

    const randomTotal = readMsEach.reduce((s, x) => s + x, 0);
    return {
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
      ...commandFigures(storePath, ref, offsets[0]!),
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
    };
  } finally {
    fs.closeSync(fd);
  }
}

// Cell: the git peer of layerfs-payload. Import: `git init && git add -A && git commit` of the
// fixture (GIT_DIR in the scratch directory, auto-gc off) → ms. Full read: `git cat-file blob
// HEAD:large.bin | cat > /dev/null` → readMs. git has no range read either (a blob is one zlib
// stream), so random reads are not measured for git.
//   node --import tsx bench/cells/payload_create_read.ts --cell git-payload --dir FIXTURE --tmp SCRATCH --tier "10 MiB"
async function gitPayload(a: Given<typeof PAYLOAD_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const dir = path.resolve(a.dir);
  const gitDir = path.join(path.resolve(a.tmp), 'repo.git');
  const env = gitEnv(gitDir, dir);
  const size = fs.statSync(path.join(dir, 'large.bin')).size;
  const imp = gitTimed(`${GIT} init -q && ${GIT} add -A && ${GIT} commit -q -m x`, env, dir);
  const storeBytes = duBytes(gitDir);
  const read = gitTimed(`${GIT} cat-file blob HEAD:large.bin | cat > /dev/null`, env, dir);
  return {
    ms: r1(imp.ms),
    maxRssMiB: r1(Math.max(imp.maxRssMiB, read.maxRssMiB)),
    files: 1,
    bytes: size,
    importMBps: mbps(size, imp.ms),
    readMs: r1(read.ms),
    readMBps: mbps(size, read.ms),
    storeBytes,
  };
}

export const payload = defineCell({
  file: import.meta.url,
  id: 'layerfs-payload',
  tool: 'layerfs',
  args: PAYLOAD_OPTIONS,
  required: ['dir', 'tmp'],
  run: layerfsPayload,
  peers: [{ id: 'git-payload', tool: 'git', run: gitPayload }],
});

runIfMain(import.meta.url, payload);
