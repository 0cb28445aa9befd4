// What telling the addon a dictionary's id saves: the same content groups
// compressed on the addon's threads (zstdCompressStart + zstdCompressResult, eight jobs in flight,
// as a writer keeps them) and decoded (zstdDictDecompressInto, as the delta planner's base reader
// decodes old frames), each way given the dictionary as bytes only (compared byte for byte with
// the one the addon holds, on every frame) and as bytes with its id (32 bytes compared), in
// alternated rounds in one process. Content: 32 KiB groups of the real-tree fixture's release A
// `.js` files (else this repository's lib/), the dictionary trained from them as a Store trains
// its own (262,144 bytes). Reported per way: the process's CPU (the addon's threads included)
// and the wall time, medians of the rounds.
// DECISIONS.md, "Dictionaries are known by their id".
//   node --import tsx bench/micro/dictionary-key.bench.ts [--rounds N] [--groups N]  → one JSON line
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { zstdCompressResult, zstdCompressStart } from '../../lib/native/zstd.js';
import { zstdDictCompress, zstdDictDecompressInto, zstdTrainDictionary, type DictionaryInput } from '../../lib/native/zstd-dict.js';
import { idOf, ObjectKind } from '../../lib/store/index.js';
import { DICT_LEVEL } from '../../lib/store/codec.js';
import { SEGMENT } from '../../lib/store/dictionary.js';

const argv = process.argv.slice(2);
const option = (name: string, dflt: number): number => {
  const i = argv.indexOf(name);
  return i >= 0 ? Number(argv[i + 1]) : dflt;
};
const ROUNDS = option('--rounds', 5);
const GROUPS = option('--groups', 6858);
const GROUP = 32 * 1024;
const DICT_BYTES = 262_144;

/** Text to cut into groups: release A's `.js` files if the fixture is cached, else lib/. */
function corpus(): { from: string; text: Buffer } {
  const cache = '/root/.cache/layerfs-bench';
  const a = fs.existsSync(cache) ? fs.readdirSync(cache).find((n) => n.startsWith('real-tree-a-')) : undefined;
  const root = a ? path.join(cache, a, 'tree') : path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'lib');
  const parts: Buffer[] = [];
  let bytes = 0;
  for (const e of fs.readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!e.isFile() || !/\.(js|ts)$/.test(e.name)) continue;
    const b = fs.readFileSync(path.join(e.parentPath, e.name));
    parts.push(b);
    bytes += b.length;
    if (bytes >= 64 << 20) break;
  }
  return { from: root, text: Buffer.concat(parts) };
}

const { from, text } = corpus();
const groups: Buffer[] = [];
for (let off = 0; off + GROUP <= text.length && groups.length < 2048; off += GROUP) groups.push(text.subarray(off, off + GROUP));
const sizes = new Uint32Array(groups.length).fill(GROUP);
const trained = zstdTrainDictionary(Buffer.concat(groups), sizes, DICT_BYTES, SEGMENT);
const bytes = trained ?? text.subarray(0, DICT_BYTES);
const keyed: DictionaryInput = { id: idOf(ObjectKind.Dictionary, bytes), bytes };
const frames = groups.map((g) => zstdDictCompress(g, DICT_LEVEL, bytes));
const out = Buffer.alloc(GROUP);

function timed(fn: () => void): { cpuMs: number; wallMs: number } {
  const c = process.cpuUsage();
  const t = performance.now();
  fn();
  const u = process.cpuUsage(c);
  return { cpuMs: (u.user + u.system) / 1000, wallMs: performance.now() - t };
}

function compressAll(dict: DictionaryInput): void {
  const jobs: number[] = [];
  for (let i = 0; i < GROUPS; i++) {
    jobs.push(zstdCompressStart(groups[i % groups.length]!, DICT_LEVEL, dict));
    if (jobs.length > 8) zstdCompressResult(jobs.shift()!);
  }
  for (const j of jobs) zstdCompressResult(j);
}

function decodeAll(dict: DictionaryInput): void {
  for (let i = 0; i < GROUPS; i++) zstdDictDecompressInto(frames[i % frames.length]!, out, -1, dict);
}

const runs: Record<string, { cpuMs: number; wallMs: number }[]> = { compressBytes: [], compressKeyed: [], decodeBytes: [], decodeKeyed: [] };
for (let r = 0; r < ROUNDS; r++) {
  // Alternated, the first way of each round swapped round to round.
  const ways: [string, () => void][] = [
    ['compressBytes', () => compressAll(bytes)],
    ['compressKeyed', () => compressAll(keyed)],
    ['decodeBytes', () => decodeAll(bytes)],
    ['decodeKeyed', () => decodeAll(keyed)],
  ];
  if (r % 2) ways.reverse();
  for (const [name, fn] of ways) runs[name]!.push(timed(fn));
}
const median = (xs: number[]): number => [...xs].sort((p, q) => p - q)[xs.length >> 1]!;
const summary: Record<string, unknown> = { corpus: from, groups: GROUPS, dictionaryBytes: bytes.length, trained: trained !== null, rounds: ROUNDS };
for (const [name, xs] of Object.entries(runs)) {
  summary[`${name}CpuMs`] = Math.round(median(xs.map((x) => x.cpuMs)));
  summary[`${name}WallMs`] = Math.round(median(xs.map((x) => x.wallMs)));
}
console.log(JSON.stringify(summary));
