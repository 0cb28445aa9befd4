/**
 * Format 12: a dictionary frame's objects row names its dictionary by a 1–2 byte ref into the
 * `dictionaries` table. A format-11 Store (rows naming the dictionary by its 32-byte id) reads
 * as is when opened read-only, is upgraded when opened for writing, verifies and exports
 * byte-identically; a ref that names nothing is ERR_CORRUPT on read and in verify; gc keeps a
 * dictionary its frames name by ref even when it is no longer the current one; frames travel
 * between Stores by the dictionary's id and are named by the receiver's own ref.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { Codec, FORMAT_VERSION, FrameSource, insertFrames, ObjectKind, Store } from '../../lib/store/index.js';
import { decodeRef, encodeRef } from '../../lib/store/dictionary-refs.js';
import { LayerFsError } from '../../lib/errors.js';
import { asFormat } from '../helpers/formats.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { assertSameContent, contentOf, makeHistory, makeSource } from '../helpers/repack.js';
import { tempDir } from '../helpers/tmp.js';

/** A Store with a history whose content groups a repack compressed with one dictionary. */
async function dictionaryStore(prefix: string): Promise<{ path: string; dir: string }> {
  const dir = tempDir(prefix);
  makeSource(join(dir, 'src'), 480);
  const path = join(dir, 's.layerfs');
  await makeHistory(path, join(dir, 'src'), join(dir, 'ws'));
  const c = Client.connect(path);
  try {
    await c.repack();
  } finally {
    c.close();
  }
  return { path, dir };
}

function rows(path: string): { codec: number; base: Buffer | null }[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT codec, base FROM objects WHERE codec = ?').all(Codec.Dict) as { codec: number; base: Buffer | null }[];
  } finally {
    db.close();
  }
}

function dictionaryIds(path: string): Buffer[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT id FROM objects WHERE kind = ?').pluck().all(ObjectKind.Dictionary) as Buffer[];
  } finally {
    db.close();
  }
}

test('refs: 1 byte up to 255, 2 bytes up to 65,535, never a leading zero byte', () => {
  for (const n of [1, 2, 127, 255, 256, 4097, 65535]) assert.equal(decodeRef(encodeRef(n)), n);
  assert.equal(encodeRef(255).length, 1);
  assert.equal(encodeRef(256).length, 2);
  for (const bad of [[], [0], [0, 1], [1, 2, 3]]) assert.equal(decodeRef(Buffer.from(bad)), undefined);
});

test('a format-11 Store reads as is, is upgraded to format 12, verifies and exports byte-identically', { timeout: 300_000 }, async () => {
  const { path, dir } = await dictionaryStore('layerfs-dref-up-');
  const dict = dictionaryIds(path);
  assert.equal(dict.length, 1);
  const written = rows(path);
  assert.ok(written.length > 100, `${written.length} rows in dictionary frames`);
  assert.ok(written.every((r) => r.base?.length === 1), 'format 12 writes a one-byte ref');
  const db = new Database(path);
  asFormat(db, 11);
  db.close();
  assert.ok(rows(path).every((r) => r.base?.equals(dict[0]!)), 'format 11 names the dictionary by its id');
  // Read-only: not upgraded, read as format 11.
  const ro = Store.open(path, { readonly: true });
  assert.equal(ro.info.formatVersion, 11);
  ro.close();
  const before = contentOf(path, dir);
  assertStoreIntact(path);
  const s = Store.open(path);
  assert.equal(s.info.formatVersion, FORMAT_VERSION);
  assert.equal(FORMAT_VERSION, 13);
  s.close();
  const upgraded = rows(path);
  assert.equal(upgraded.length, written.length);
  assert.ok(upgraded.every((r) => r.base?.equals(Buffer.from([1]))), 'the upgrade gave the dictionary ref 1');
  assertSameContent(path, dir, before);
  assertStoreIntact(path);
});

test('a ref that names no dictionary is ERR_CORRUPT on read, and verify names every object of its frames', { timeout: 300_000 }, async () => {
  for (const bad of [Buffer.from([7]), Buffer.from([0, 1]), Buffer.alloc(0), Buffer.from([1, 2, 3])]) {
    const { path } = await dictionaryStore('layerfs-dref-bad-');
    const db = new Database(path);
    const coded = db.prepare('SELECT id FROM objects WHERE codec = ?').pluck().all(Codec.Dict) as Buffer[];
    db.prepare('UPDATE objects SET base = ? WHERE codec = ?').run(bad, Codec.Dict);
    db.close();
    const s = Store.open(path, { readonly: true });
    try {
      for (const id of coded.slice(0, 20)) {
        assert.throws(
          () => s.objects.get(id),
          (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT' && /dictionary/.test(e.message),
          `ref ${bad.toString('hex')}`,
        );
      }
    } finally {
      s.close();
    }
    const c = Client.connect(path, { readonly: true });
    try {
      const v = c.verify();
      assert.equal(v.ok, false);
      const named = new Set(v.damaged.map((d) => d.objectId));
      for (const id of coded) assert.ok(named.has(id.toString('hex')), `verify names ${id.toString('hex')} (ref ${bad.toString('hex')})`);
    } finally {
      c.close();
    }
  }
});

test('gc keeps a dictionary its frames name by ref after it stopped being the current one', { timeout: 300_000 }, async () => {
  const { path } = await dictionaryStore('layerfs-dref-gc-');
  const dict = dictionaryIds(path)[0]!;
  const db = new Database(path);
  db.prepare("DELETE FROM meta WHERE key = 'dictionary'").run();
  db.close();
  const c = Client.connect(path);
  try {
    await c.gc();
  } finally {
    c.close();
  }
  assert.deepEqual(dictionaryIds(path), [dict]);
  assertStoreIntact(path);
});

test('dictionary frames travel by the dictionary id; the receiver names it by its own ref', { timeout: 300_000 }, async () => {
  const { path, dir } = await dictionaryStore('layerfs-dref-send-');
  const dict = dictionaryIds(path)[0]!;
  const src = Store.open(path, { readonly: true });
  const dst = Store.create(join(dir, 'dst.layerfs'));
  try {
    // The receiver already names another dictionary with ref 1.
    dst.db.exec("CREATE TABLE dictionaries (ref BLOB PRIMARY KEY CHECK (length(ref) BETWEEN 1 AND 2), id BLOB NOT NULL CHECK (length(id) = 32)) STRICT, WITHOUT ROWID; INSERT INTO dictionaries VALUES (x'01', zeroblob(32));");
    const coded = src.db.prepare('SELECT id FROM objects WHERE codec = ? LIMIT 200').pluck().all(Codec.Dict) as Buffer[];
    const source = new FrameSource(src);
    const frames = src.read(() => source.frames([dict, ...coded], () => false));
    for (const f of frames) for (const m of f.members) if (m.codec === Codec.Dict) assert.ok(m.base?.equals(dict), 'a frame travels with the dictionary id');
    await insertFrames(dst, frames);
    const base = dst.db.prepare('SELECT codec, base FROM objects WHERE id = ?');
    for (const id of coded) {
      assert.deepEqual(base.get(id), { codec: Codec.Dict, base: Buffer.from([2]) });
      assert.ok(dst.objects.get(id).equals(src.objects.get(id)));
    }
  } finally {
    src.close();
    dst.close();
  }
  assertStoreIntact(join(dir, 'dst.layerfs'));
});
