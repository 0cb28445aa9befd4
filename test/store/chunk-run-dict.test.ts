// Chunks a repack compressed with the Store's dictionary (Codec.Dict) are read as runs: a streamed
// read and seeded ranges return the file's bytes, decoded and verified by the addon (no chunk read
// one by one through the ObjectReader), with the dictionary read and authenticated once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { chunkAndHash } from '../../lib/native/index.js';
import { Client } from '../../lib/sdk/index.js';
import { stateRoot } from '../../lib/sdk/read.js';
import { Codec, ObjectKind, Store } from '../../lib/store/index.js';
import { cover } from '../helpers/chunk-runs.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { Rng } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const SEED = Number(process.env.LAYERFS_SEED ?? Math.floor(Math.random() * 2 ** 31));

function text(rng: Rng, n: number): Buffer {
  const words = ['const', 'return', 'function', 'value', 'this', 'export', 'import', 'from', 'if', 'else'];
  const parts: string[] = [];
  for (let len = 0; len < n; ) {
    const w = words[rng.below(words.length)]! + (rng.below(10) === 0 ? '\n' : ' ');
    parts.push(w);
    len += w.length;
  }
  return Buffer.from(parts.join('')).subarray(0, n);
}

test(`chunks compressed with the Store's dictionary are read as runs, streamed and by range (seed ${SEED})`, { timeout: 180_000 }, async () => {
  const rng = new Rng(SEED);
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib'), { recursive: true });
  // Small files to train the dictionary on, and a large file of the same kind of text.
  for (let i = 0; i < 400; i++) writeFileSync(join(src, 'lib', `f${i}.js`), text(rng, 1500 + rng.below(3000)));
  const big = text(rng, 3 * 1024 * 1024 + rng.below(100_000));
  writeFileSync(join(src, 'big.js'), big);
  const path = join(dir, 's.layerfs');
  const client = Client.create(path);
  await client.initLayerStack({ name: 'p', source: src });
  await client.repack({ full: true });
  client.close();
  const db = new Database(path, { readonly: true });
  const dictChunks = db.prepare('SELECT count(*) FROM objects WHERE kind = ? AND codec = ?').pluck().get(ObjectKind.Chunk, Codec.Dict) as number;
  db.close();
  assert.ok(dictChunks > 0, `${dictChunks} chunks in dictionary frames`);

  const store = Store.open(path);
  try {
    const gets: (ObjectKind | undefined)[] = [];
    const get = store.objects.get.bind(store.objects);
    store.objects.get = (id, kind) => {
      gets.push(kind);
      return get(id, kind);
    };
    const view = store.view(stateRoot(store, 'p'));
    const file = view.resolve([Buffer.from('big.js')], 'big.js').inode;
    assert.ok(Buffer.concat([...view.content(file)]).equals(big), 'the streamed bytes');
    assert.equal(gets.filter((k) => k === ObjectKind.Chunk).length, 0, 'no chunk read one by one');
    assert.equal(gets.filter((k) => k === ObjectKind.Dictionary).length, 1, 'the dictionary read once');

    // Ranges, as the FUSE reader threads read them (views of reused buffers).
    const run = chunkAndHash(big).map((c) => ({ id: c.id, length: c.length }));
    const runs = store.chunkRuns();
    for (let r = 0; r < 60; r++) {
      const pos = rng.below(big.length);
      const len = Math.min(big.length - pos, 1 + rng.below(1 << 20));
      const { chunks, from } = cover(run, pos, len);
      const dst = Buffer.alloc(len);
      runs.read(chunks, from, len, dst, 0);
      assert.ok(dst.equals(big.subarray(pos, pos + len)), `range ${pos}+${len}`);
    }
    assert.equal(gets.filter((k) => k === ObjectKind.Chunk).length, 0, 'no chunk of a range read one by one');
  } finally {
    store.close();
  }
  assertStoreIntact(path);
});
