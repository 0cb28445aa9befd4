// Reads at the end of a delta chain against a read of an object stored whole: 60 versions of a
// 20 KB source file, each a small edit of the one before, each written in its own transaction
// with its predecessor as delta base (the way commits write changed files). Writers bound chains
// at DELTA_MAX_DEPTH links (rebasing at REBASE_DEPTH), so the deepest version read is the one
// whose chain is longest. Cold reads empty the reader's row, frame and base caches first and
// re-hash every object on the chain; warm reads find the chain's bases in the base cache.
// With --repack the Store is repacked first (db repack: small files' bases chosen anew, chains
// within SELECT_DEPTH links) and the deepest chain after it is read.
//   node --import tsx bench/micro/delta-chain.bench.ts [--repack]   → one JSON line
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Codec, ObjectKind, Store } from '../../lib/store/index.js';
import { DELTA_MAX_DEPTH } from '../../lib/store/codec.js';

function depthOf(store: Store, id: Buffer): number {
  const loc = store.objects.locator(id)!;
  return loc.codec === Codec.Delta ? 1 + depthOf(store, loc.base!.subarray(0, 32)) : 0;
}

/** Median of `n` reads of `id`, in microseconds; cold: caches emptied before each. */
function timedRead(store: Store, id: Buffer, n: number, cold = true): number {
  const t: number[] = [];
  for (let i = 0; i < n; i++) {
    if (cold) store.objects.reset();
    const s = performance.now();
    store.objects.get(id, ObjectKind.Blob);
    t.push((performance.now() - s) * 1000);
  }
  t.sort((a, b) => a - b);
  return Math.round(t[n >> 1]!);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-delta-chain-'));
const store = Store.create(path.join(dir, 's.sqlite'));
try {
  const line = (i: number) => `export function handler${i}(req, res) { return res.status(200).json({ id: ${i}, ok: true }); }\n`;
  let text = Array.from({ length: 220 }, (_, i) => line(i)).join('');
  let prev = store.writeSync((w) => w.add(ObjectKind.Blob, Buffer.from(text)));
  const versions: Buffer[] = [prev];
  for (let v = 1; v < 60; v++) {
    const at = (v * 7919) % (text.length - 64);
    text = `${text.slice(0, at)}/* release ${v} */${text.slice(at + 8)}`;
    const data = Buffer.from(text);
    const base = prev;
    prev = store.writeSync((w) => {
      const id = w.add(ObjectKind.Blob, data);
      w.suggestBase(id, base);
      return id;
    });
    versions.push(prev);
  }
  // A whole object of the same size, alone in its group: a new file nobody offered a base.
  const whole = store.writeSync((w) => w.add(ObjectKind.Blob, Buffer.from(text.replace(/handler/g, 'route'))));
  if (process.argv.includes('--repack')) await store.repack();
  const depths = versions.map((id) => depthOf(store, id));
  const deepest = versions[depths.indexOf(Math.max(...depths))]!;
  const reads = 400;
  timedRead(store, deepest, 50);
  timedRead(store, whole, 50);
  const chainUs = timedRead(store, deepest, reads);
  const wholeUs = timedRead(store, whole, reads);
  // Warm: the chain's bases are in the reader's base cache (a second read, or a neighbour's).
  const warmChainUs = timedRead(store, deepest, reads, false);
  const warmWholeUs = timedRead(store, whole, reads, false);
  const r = (a: number, b: number) => +(a / b).toFixed(2);
  console.log(JSON.stringify({ bytes: text.length, maxDepth: Math.max(...depths), bound: DELTA_MAX_DEPTH, deltas: depths.filter((d) => d > 0).length, coldChainUs: chainUs, coldWholeUs: wholeUs, coldRatio: r(chainUs, wholeUs), warmChainUs, warmWholeUs, warmRatio: r(warmChainUs, warmWholeUs) }));
} finally {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
