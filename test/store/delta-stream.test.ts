/**
 * A streamed read of a large file stored as chunk deltas of its previous version: the chunks and
 * the old chunks their deltas are against are located in batches (ObjectReader.prefetchWithBases)
 * rather than one statement each, and the read returns the same bytes when those batches went
 * stale because another connection repacked the Store between two of its pieces.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { stateRoot } from '../../lib/sdk/read.js';
import { Codec, ObjectKind, Store } from '../../lib/store/index.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { Rng } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const SEED = Number(process.env.LAYERFS_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** Text like a bundle of code: lines of words from a small vocabulary. */
function bundle(rng: Rng, lines: number): string[] {
  const words = ['const', 'return', 'function', 'value', 'this', 'export', 'import', 'from', 'if', 'else', 'await', 'node'];
  return Array.from({ length: lines }, (_, i) => `${Array.from({ length: 4 + rng.below(8) }, () => words[rng.below(words.length)]).join(' ')} ${i};`);
}

function deltaChunks(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT count(*) FROM objects WHERE kind = ? AND codec = ?').pluck().get(ObjectKind.Chunk, Codec.Delta) as number;
  } finally {
    db.close();
  }
}

test(`a file stored as chunk deltas streams its bytes with chunks and bases located in batches, across a repack (seed ${SEED})`, { timeout: 180_000 }, async () => {
  const rng = new Rng(SEED);
  const dir = tempDir();
  const src = join(dir, 'src');
  fs.mkdirSync(src);
  const a = bundle(rng, 120_000);
  // The next release: a version tag on every 400th line, lines removed and inserted.
  const b = a.flatMap((l, i) => (i % 2500 === 7 ? [] : i % 3000 === 11 ? [l, 'inserted line;'] : [i % 400 === 0 ? `${l} // v2` : l])).join('\n');
  fs.writeFileSync(join(src, 'bundle.js'), a.join('\n'));
  const path = join(dir, 's.layerfs');
  const client = Client.create(path);
  const init = await client.initLayerStack({ name: 'p', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  const ws = await client.createWorkspace('main', { at: join(dir, 'ws'), projection: 'materialize' });
  fs.writeFileSync(join(ws.path, 'bundle.tmp'), b);
  fs.renameSync(join(ws.path, 'bundle.tmp'), join(ws.path, 'bundle.js'));
  assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
  await client.endWorkspace(ws.id);
  const deltas = deltaChunks(path);
  assert.ok(deltas > 40, `${deltas} chunks stored as deltas`);
  const want = Buffer.from(b);

  const reader = Store.open(path);
  try {
    // Count what the read asks to locate in batches.
    const objects = reader.objects;
    const batched: number[] = [];
    const original = objects.prefetchWithBases.bind(objects);
    objects.prefetchWithBases = (ids) => {
      batched.push(ids.length);
      original(ids);
    };
    const view = reader.view(stateRoot(reader, 'main'));
    const file = view.resolve([Buffer.from('bundle.js')], 'bundle.js').inode;
    assert.ok(Buffer.concat([...view.content(file)]).equals(want), 'the bytes of the new release');
    assert.ok(batched.length > 0 && batched.reduce((s, n) => s + n, 0) >= deltas / 2, `located in batches: ${batched.join(', ')} of ${deltas} delta chunks`);

    // Between two pieces another connection rewrites every row: the located batches go stale.
    const pieces: Buffer[] = [];
    let repacked = false;
    for (const piece of view.content(file)) {
      pieces.push(Buffer.from(piece));
      if (!repacked) {
        repacked = true;
        await client.repack({ full: true });
      }
    }
    assert.ok(Buffer.concat(pieces).equals(want), 'the same bytes after the repack moved every chunk');
  } finally {
    reader.close();
  }
  client.close();
  assertStoreIntact(path);
});
