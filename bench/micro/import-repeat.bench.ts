// Imports of one small-file tree repeated in one process: the steady-state cost of
// Client.create + initLayerStack, without the first import's module loading and JIT warm-up
// (which the init_namespace cell includes). The tree is 1,000 text files of 0.5–10 KB in 40
// directories, drawn from a fixed seed, so two builds of the product import the same bytes.
//   node --import tsx bench/micro/import-repeat.bench.ts [--rounds 15]   → one JSON line
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from '../../lib/sdk/index.js';
import { median } from '../lib/measure.js';
import { rng } from '../../test/helpers/random.js';


function writeTree(dir: string): void {
  const r = rng(1);
  const vocabulary = Array.from({ length: 2000 }, () => Array.from({ length: 2 + Math.floor(r() * 8) }, () => String.fromCharCode(97 + Math.floor(r() * 10))).join(''));
  for (let i = 0; i < 1000; i++) {
    const d = path.join(dir, `d${i % 40}`);
    fs.mkdirSync(d, { recursive: true });
    const n = 100 + Math.floor(r() * 1400);
    fs.writeFileSync(path.join(d, `f${i}.txt`), Array.from({ length: n }, () => vocabulary[Math.floor(r() * vocabulary.length)]).join(' '));
  }
}

const at = process.argv.indexOf('--rounds');
const rounds = at >= 0 ? Number(process.argv[at + 1]) : 15;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-import-repeat-'));
try {
  const src = path.join(tmp, 'src');
  writeTree(src);
  const ms: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const store = path.join(tmp, `store-${i}.sqlite`);
    const t0 = performance.now();
    const client = Client.create(store);
    await client.initLayerStack({ name: 'p', source: src });
    client.close();
    ms.push(performance.now() - t0);
    fs.rmSync(store, { force: true });
  }
  console.log(JSON.stringify({ files: 1000, rounds, medianMs: Number(median(ms).toFixed(1)), minMs: Number(Math.min(...ms).toFixed(1)) }));
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
