// What a chunk delta's zstd level costs and saves on the real tree's release upgrade, in one
// process: every file of at least 128 KiB in both releases is chunked in both; each chunk of B
// that A does not hold (and B has not held before) is offered A's chunks at the same place
// (ChunkDeltaSource, as a commit offers them) and compressed with them as its prefix at each
// level given. A delta is kept at most KEEP_DELTA of its chunk, else the chunk is counted
// compressed whole at COMPRESSION_LEVEL (as its pack row would be, without a row's context).
// Reported per level: trials, deltas kept, CPU of the delta compressions alone, delta bytes, the
// other new chunks' bytes, and the sum. Level choices are re-measured here (DECISIONS.md, "A
// commit's small-file deltas at zstd level 3"; docs/BENCHMARKS.md, 2026-12-05 and 2026-12-07).
//   node --import tsx bench/micro/chunk-delta-levels.bench.ts [--a DIR --b DIR] LEVEL...  → JSON lines
import fs from 'node:fs';
import path from 'node:path';
import { chunkAndHash, type ChunkRef } from '../../lib/native/chunker.js';
import { zstdCompress } from '../../lib/native/zstd.js';
import { ChunkDeltaSource } from '../../lib/store/chunk-delta.js';
import { COMPRESSION_LEVEL, KEEP_DELTA } from '../../lib/store/codec.js';
import { SMALL_FILE_THRESHOLD } from '../../lib/store/tree/inode.js';

const argv = process.argv.slice(2);
const option = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv.splice(i, 2)[1] : undefined;
};
const cache = '/root/.cache/layerfs-bench';
const fixture = (r: string): string => {
  const d = fs.existsSync(cache) ? fs.readdirSync(cache).find((n) => n.startsWith(`real-tree-${r}-`)) : undefined;
  if (!d) throw new Error(`no cached real-tree release ${r} under ${cache}: run the real_tree_releases family once, or pass --${r} DIR`);
  return path.join(cache, d, 'tree');
};
const A = path.resolve(option('--a') ?? fixture('a'));
const B = path.resolve(option('--b') ?? fixture('b'));
const levels = argv.map(Number);
if (levels.length === 0 || levels.some((l) => !Number.isInteger(l) || l < 1 || l > 19)) throw new Error('give the zstd levels to try (1..19)');

const large = (p: string): boolean => {
  try {
    const st = fs.lstatSync(p);
    return st.isFile() && st.size >= SMALL_FILE_THRESHOLD;
  } catch {
    return false;
  }
};
interface Pair {
  a: Buffer;
  b: Buffer;
  ca: ChunkRef[];
  cb: ChunkRef[];
}
const pairs: Pair[] = [];
const inA = new Set<string>();
for (const e of fs.readdirSync(B, { recursive: true, withFileTypes: true })) {
  const rel = path.relative(B, path.join(e.parentPath, e.name));
  if (!e.isFile() || !large(path.join(B, rel)) || !large(path.join(A, rel))) continue;
  const a = fs.readFileSync(path.join(A, rel));
  const b = fs.readFileSync(path.join(B, rel));
  const ca = chunkAndHash(a);
  for (const c of ca) inA.add(Buffer.from(c.id).toString('latin1'));
  pairs.push({ a, b, ca, cb: chunkAndHash(b) });
}

for (const level of levels) {
  let tried = 0;
  let kept = 0;
  let deltaBytes = 0;
  let wholeBytes = 0;
  let cpuUs = 0;
  let freshBytes = 0;
  const seen = new Set<string>();
  for (const { a, b, ca, cb } of pairs) {
    const old = new Map(ca.map((c) => [Buffer.from(c.id).toString('latin1'), c]));
    const source = new ChunkDeltaSource(ca.map((c) => ({ id: Buffer.from(c.id), length: c.length })), b.length);
    for (const c of cb) {
      const key = Buffer.from(c.id).toString('latin1');
      const fresh = !inA.has(key) && !seen.has(key);
      seen.add(key);
      const bases = source.next(Buffer.from(c.id), c.length, fresh);
      if (!fresh) continue;
      const data = b.subarray(c.offset, c.offset + c.length);
      freshBytes += c.length;
      let delta: Buffer | undefined;
      if (bases && bases.length > 0) {
        const prefix = Buffer.concat(bases.map((id) => {
          const o = old.get(id.toString('latin1'))!;
          return a.subarray(o.offset, o.offset + o.length);
        }));
        tried++;
        const t = process.cpuUsage();
        delta = zstdCompress(data, level, prefix);
        const u = process.cpuUsage(t);
        cpuUs += u.user + u.system;
        source.result(delta.length <= KEEP_DELTA * c.length);
      }
      if (delta && delta.length <= KEEP_DELTA * c.length) {
        kept++;
        deltaBytes += delta.length;
      } else wholeBytes += zstdCompress(data, COMPRESSION_LEVEL).length;
    }
  }
  console.log(JSON.stringify({ level, files: pairs.length, freshBytes, tried, kept, deltaCpuMs: Math.round(cpuUs / 1000), deltaBytes, restBytes: wholeBytes, storedBytes: deltaBytes + wholeBytes }));
}
