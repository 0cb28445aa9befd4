// Pack rows read by the addon through the connection's own SQLite (lib/native blobRead, the
// addon loaded as a SQLite extension) into reused buffers: a property test of ChunkRunReader
// against the files' bytes, with rows read by the addon and with SELECT, over seeded random
// ranges (read() and views(), as the FUSE reader threads use them) and whole streams (pieces(), some stopped
// early); the row buffers stay few; a row changed between two reads (reset after a rewrite) is
// read again as it is now; blobRead's answers for a missing row, a range outside its row, and a
// closed connection, and a table or column that is not there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADDON_PATH, BLOB_ENTRY, BLOB_HANDLE_SQL, BlobRead, blobRead, chunkAndHash } from '../../lib/native/index.js';

const packRead = (h: number, rowid: number, offset: number, length: number, out: Buffer, outOffset: number) => blobRead(h, 'packs', 'data', rowid, offset, length, out, outOffset);
import { Client } from '../../lib/sdk/index.js';
import { ChunkRunReader, type ChunkRef } from '../../lib/store/chunk-run.js';
import { Store } from '../../lib/store/index.js';
import { cover } from '../helpers/chunk-runs.js';
import { Rng, seededBytes } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const MIB = 1024 * 1024;
const SEED = Number(process.env.LAYERFS_SEED ?? Math.floor(Math.random() * 2 ** 31));

function text(n: number, salt: number): Buffer {
  const lines: string[] = [];
  let bytes = 0;
  for (let i = 0; bytes < n; i++) {
    const l = `row ${(i * 11 + salt) % 991} of a compressible file ${i % 17}\n`;
    lines.push(l);
    bytes += l.length;
  }
  return Buffer.from(lines.join('')).subarray(0, n);
}

interface Fixture {
  storePath: string;
  files: { name: string; bytes: Buffer; run: ChunkRef[] }[];
}

async function fixture(): Promise<Fixture> {
  const dir = tempDir('layerfs-chunk-run-rows-');
  const src = join(dir, 'src');
  mkdirSync(src);
  const made: [string, Buffer][] = [
    ['random.bin', seededBytes(SEED, 3 * MIB + 4321)],
    ['text.bin', text(4 * MIB + 99, SEED % 1000)],
    ['mixed.bin', Buffer.concat([text(MIB + 7, 5), seededBytes(SEED, MIB, 1), text(MIB, 6), seededBytes(SEED, 700_001, 2)])],
  ];
  for (const [name, bytes] of made) writeFileSync(join(src, name), bytes);
  const storePath = join(dir, 's.layerfs');
  const c = Client.create(storePath);
  await c.initLayerStack({ name: 'p', source: src });
  await c.close();
  const files = made.map(([name]) => {
    const bytes = readFileSync(join(src, name));
    return { name, bytes, run: chunkAndHash(bytes).map((ch) => ({ id: ch.id, length: ch.length })) };
  });
  return { storePath, files };
}


test(`ChunkRunReader reads every range and stream byte for byte, rows read by the addon or by SELECT (seed ${SEED})`, { timeout: 300_000 }, async () => {
  const f = await fixture();
  const store = Store.open(f.storePath);
  try {
    const rng = new Rng(SEED, 7);
    for (const native of [true, false]) {
      const runs = new ChunkRunReader(store.db, store.objects, 2, native);
      assert.equal(runs.rowReads.native, native && ADDON_PATH !== '', `rows read by the addon: ${native}`);
      const dst = Buffer.alloc(2 * MIB + 64);
      for (let i = 0; i < 300; i++) {
        const file = f.files[rng.below(f.files.length)]!;
        const size = file.bytes.length;
        // Mostly READ-sized ranges in order from a random place, sometimes tiny or at the end.
        const len = rng.below(4) === 0 ? 1 + rng.below(5000) : 1 + rng.below(2 * MIB);
        const pos = rng.below(size);
        const n = Math.min(len, size - pos);
        const { chunks, from } = cover(file.run, pos, n);
        const at = rng.below(64);
        if (i % 2 === 0) runs.read(chunks, from, n, dst, at);
        else Buffer.concat(runs.views(chunks, from, n)).copy(dst, at);
        assert.ok(dst.subarray(at, at + n).equals(file.bytes.subarray(pos, pos + n)), `seed ${SEED}: ${file.name} [${pos}, ${pos + n}) native ${native}, ${i % 2 ? 'views' : 'read'}`);
        assert.ok(runs.rowReads.buffers <= 8, `seed ${SEED}: ${runs.rowReads.buffers} row buffers held`);
      }
      for (const file of f.files) {
        const pieces = [...runs.pieces(file.run)];
        assert.ok(Buffer.concat(pieces).equals(file.bytes), `seed ${SEED}: ${file.name} streamed, native ${native}`);
        // The pieces are the reader's to give away: reading on changes none of them.
        const copy = pieces.map((p) => Buffer.from(p));
        for (const other of f.files) for (const _ of runs.pieces(other.run)) void _;
        assert.ok(pieces.every((p, k) => p.equals(copy[k]!)), `seed ${SEED}: ${file.name}'s pieces unchanged by later reads`);
        // Streams stopped after a piece or two let go of the rows they held.
        for (let k = 0; k < 20; k++) {
          let taken = 0;
          for (const _ of runs.pieces(file.run)) if (++taken > k % 3) break;
        }
        assert.ok(runs.rowReads.buffers <= 8, `seed ${SEED}: ${runs.rowReads.buffers} row buffers held after stopped streams`);
      }
    }
  } finally {
    store.close();
  }
});

test('a row rewritten between reads is read as it is now; blobRead answers for missing rows, ranges outside, closed connections, unknown tables', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const store = Store.open(f.storePath);
  const file = f.files[0]!;
  try {
    const runs = new ChunkRunReader(store.db, store.objects);
    const dst = Buffer.alloc(file.bytes.length);
    runs.read(file.run, 0, file.bytes.length, dst, 0);
    assert.ok(dst.equals(file.bytes));
    // Rewrite a row in place with its bytes shifted by one (same ids, damaged bytes): the reused
    // buffer is not trusted over the row (every chunk is verified), the read fails typed.
    const loc = store.objects.locator(file.run[2]!.id)!;
    const row = store.db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(loc.pack) as Buffer;
    store.db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(Buffer.concat([Buffer.from([0]), row]), loc.pack);
    runs.reset();
    store.objects.reset();
    assert.throws(() => runs.read(file.run, 0, file.bytes.length, dst, 0), (e: unknown) => (e as { code?: string }).code === 'ERR_CORRUPT');
    // Put it back: read again as it is now.
    store.db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(row, loc.pack);
    runs.reset();
    store.objects.reset();
    dst.fill(0);
    runs.read(file.run, 0, file.bytes.length, dst, 0);
    assert.ok(dst.equals(file.bytes), 'read again after the row was put back');
  } finally {
    store.close();
  }
  if (!ADDON_PATH) return;
  const other = Store.open(f.storePath);
  const db = other.db as unknown as { loadExtension(file: string, entry: string): void; prepare(sql: string): { pluck(): { get(...a: unknown[]): unknown } } };
  db.loadExtension(ADDON_PATH, BLOB_ENTRY);
  db.loadExtension(ADDON_PATH, BLOB_ENTRY);
  const h = Number(db.prepare(BLOB_HANDLE_SQL).pluck().get());
  assert.ok(h > 0);
  const pack = other.objects.locator(file.run[0]!.id)!.pack;
  const size = (db.prepare('SELECT length(data) FROM packs WHERE id = ?').pluck().get(pack) as number);
  const out = Buffer.alloc(size + 10);
  assert.equal(packRead(h, pack, 0, size, out, 10), size);
  assert.ok(out.subarray(10).equals(db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(pack) as Buffer));
  assert.equal(packRead(h, pack, 1, size, out, 0), BlobRead.Outside);
  assert.equal(packRead(h, 1e9, 0, 0, out, 0), BlobRead.NoRow);
  assert.throws(() => packRead(h, pack, 0, size + 11, out, 0), RangeError);
  assert.throws(() => packRead(h, -1, 0, 0, out, 0), RangeError);
  assert.throws(() => blobRead(h, 'no_such_table', 'data', pack, 0, 0, out, 0), (e: unknown) => (e as { code?: string }).code === 'ERR_NATIVE_IO');
  assert.throws(() => blobRead(h, 'packs', 'no_such_column', pack, 0, 0, out, 0), (e: unknown) => (e as { code?: string }).code === 'ERR_NATIVE_IO');
  other.close();
  assert.equal(packRead(h, pack, 0, 0, out, 0), BlobRead.NoHandle);
});
