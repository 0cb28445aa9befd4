// The reader threads' read of stored content (lib/fuse/kernel-reader-content.ts over lib/store
// ChunkRunReader): random ranges of random, compressible and self-repeating large files read
// byte for byte as the source has them, and a damaged chunk fails with ERR_CORRUPT, never
// with wrong bytes. The random ranges print their seed (LAYERFS_MODEL_SEED picks one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Overlay } from '../../lib/fuse/overlay.js';
import { StreamedContent } from '../../lib/fuse/kernel-reader-content.js';
import { LayerFsError } from '../../lib/errors.js';
import { Store } from '../../lib/store/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { rng, seededBytes } from '../helpers/random.js';
import { setupStore, type StoreSetup } from './helpers.js';

const MIB = 1024 * 1024;

function fill(src: string): void {
  writeFileSync(join(src, 'random.bin'), seededBytes(11, 6 * MIB));
  const lines: string[] = [];
  for (let i = 0; lines.length < 150_000; i++) lines.push(`line ${i % 977} of a compressible file, ${i % 13}`);
  writeFileSync(join(src, 'text.bin'), lines.join('\n'));
  const block = seededBytes(12, MIB);
  writeFileSync(join(src, 'repeat.bin'), Buffer.concat([block, block, block, block, seededBytes(13, 1000)]));
}

/** A filled Store opened for reading, and random numbers from a printed seed (LAYERFS_MODEL_SEED picks one). */
async function seededStore(defaultSeed: number, prefix: string): Promise<{ next: () => number; s: StoreSetup; store: Store }> {
  const seed = process.env.LAYERFS_MODEL_SEED === 'random' ? Date.now() % 1e9 : Number(process.env.LAYERFS_MODEL_SEED ?? defaultSeed);
  console.log(`seed ${seed}`);
  const s = await setupStore(fill, prefix);
  return { next: rng(seed), s, store: Store.open(s.storePath) };
}

/** The extent-tree root of a file of the Branch `main`, as a mount's overlay sees it. */
function contentOf(store: Store, s: StoreSetup, name: string, b = s.client.branch('main')): { id: Buffer; size: number } {
  const root = Buffer.from(b.rootId, 'hex');
  const ov = new Overlay(store, root, { branchId: Buffer.from(b.id, 'hex'), expectedHead: null, expectedBase: Buffer.from(b.baseLayerId, 'hex'), workspaceId: null }, { spoolDir: join(s.dir, 'spool') });
  const c = ov.unchangedContent(ov.open(ov.find(1, Buffer.from(name))!, 0));
  assert.ok(c?.id, `${name} is stored as an extent tree`);
  return { id: c.id, size: c.size };
}

test('stored content read as chunk runs matches the source at random ranges', { timeout: 120_000 }, async () => {
  const { next, s, store } = await seededStore(1801, 'layerfs-reader-content-');
  try {
    const codecs = store.db.prepare('SELECT DISTINCT codec FROM objects WHERE kind = 2').pluck().all();
    assert.ok(codecs.length >= 2, `raw and coded chunks both read (codecs ${codecs.join(',')})`);
    const reader = new StreamedContent(store);
    for (const name of ['random.bin', 'text.bin', 'repeat.bin']) {
      const want = readFileSync(join(s.src, name));
      const c = contentOf(store, s, name);
      assert.equal(c.size, want.length);
      const ranges: [number, number][] = [[0, MIB], [c.size - 5000, 5000], [0, c.size]];
      for (let i = 0; i < 40; i++) {
        const pos = Math.floor(next() * c.size);
        ranges.push([pos, Math.min(c.size - pos, 1 + Math.floor(next() * 2 * MIB))]);
      }
      for (const [pos, len] of ranges) {
        const dst = Buffer.alloc(len + 7, 0xee);
        reader.read(c.id, pos, len, dst, 7);
        assert.ok(dst.subarray(7).equals(want.subarray(pos, pos + len)), `${name} [${pos}, +${len})`);
        assert.ok(dst.subarray(0, 7).equals(Buffer.alloc(7, 0xee)), 'nothing written before dstOff');
      }
    }
  } finally {
    store.close();
  }
  assertIntact(s.client);
  s.client.close();
});

test('two reads started at once on the two lanes (a reader starting its next READ) each match the source', { timeout: 120_000 }, async () => {
  const { next, s, store } = await seededStore(1802, 'layerfs-reader-lanes-');
  try {
    const reader = new StreamedContent(store);
    for (const name of ['random.bin', 'text.bin', 'repeat.bin']) {
      const want = readFileSync(join(s.src, name));
      const c = contentOf(store, s, name);
      // Consecutive 1 MiB READs as the kernel's readahead sends them (one ends in the rows the
      // next starts in), then random pairs; each pair started before the first is finished.
      const reads: [number, number][] = [];
      for (let pos = 0; pos < c.size; pos += MIB) reads.push([pos, Math.min(MIB, c.size - pos)]);
      for (let i = 0; i < 30; i++) {
        const pos = Math.floor(next() * c.size);
        reads.push([pos, Math.min(c.size - pos, 1 + Math.floor(next() * MIB))]);
      }
      let lane: 0 | 1 = 0;
      let pending = reader.start(c.id, reads[0]![0], reads[0]![1], lane);
      for (let i = 0; i < reads.length; i++) {
        lane = lane === 0 ? 1 : 0;
        const after = i + 1 < reads.length ? reader.start(c.id, reads[i + 1]![0], reads[i + 1]![1], lane) : null;
        const [pos, len] = reads[i]!;
        const got = Buffer.concat(reader.finish(pending));
        assert.ok(got.equals(want.subarray(pos, pos + len)), `${name} [${pos}, +${len}) with the next read started`);
        pending = after;
      }
    }
  } finally {
    store.close();
  }
  assertIntact(s.client);
  s.client.close();
});

test('a damaged raw chunk fails the read with ERR_CORRUPT', { timeout: 120_000 }, async () => {
  const s = await setupStore(fill, 'layerfs-reader-damage-');
  const main = s.client.branch('main');
  s.client.close();
  const store = Store.open(s.storePath);
  try {
    const c = contentOf(store, s, 'random.bin', main);
    // Flip one byte inside the second pack of raw chunks (a chunk in the middle of the file).
    const pack = store.db.prepare('SELECT pack FROM objects WHERE kind = 2 AND codec = 0 GROUP BY pack ORDER BY pack LIMIT 1 OFFSET 1').pluck().get() as number;
    const data = store.db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(pack) as Buffer;
    data[1000] = data[1000]! ^ 0xff;
    store.db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(data, pack);
    const reader = new StreamedContent(store);
    assert.throws(
      () => reader.read(c.id, 0, c.size, Buffer.alloc(c.size), 0),
      (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT',
    );
  } finally {
    store.close();
  }
});
