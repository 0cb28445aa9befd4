/**
 * Format 10: zstd dictionaries and repack's chain flattening. A format-9 Store is upgraded and
 * reads as before; a repack stores one dictionary object and compresses content groups with it
 * (codec 3); every state exports byte-identical; verify re-hashes through dictionaries and
 * deltas and names every object a damaged dictionary or chain root takes with it; dictionary
 * frames travel to another Store with their dictionary, or whole when it will not be there;
 * after a repack a delta chain is one link.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { Codec, FORMAT_VERSION, FrameSource, insertFrames, ObjectKind, Store } from '../../lib/store/index.js';
import { LayerFsError } from '../../lib/errors.js';
import { repackStore } from '../../lib/store/repack.js';
import { asFormat } from '../helpers/formats.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { contentOf, assertSameContent, makeHistory, makeSource } from '../helpers/repack.js';
import { damageStored, depthOf, hintedChain } from '../helpers/deltas.js';
import { tempDir } from '../helpers/tmp.js';

/** A Store with a history of small files, deltas and large files, written at format 9. */
async function format9Store(): Promise<{ path: string; dir: string }> {
  const dir = tempDir('layerfs-dict-');
  makeSource(join(dir, 'src'), 480);
  const path = join(dir, 's.layerfs');
  await makeHistory(path, join(dir, 'src'), join(dir, 'ws'));
  const db = new Database(path);
  asFormat(db, 9);
  db.close();
  return { path, dir };
}

function ids(path: string, where: string, ...args: unknown[]): Buffer[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(`SELECT id FROM objects WHERE ${where} ORDER BY id`).pluck().all(...args) as Buffer[];
  } finally {
    db.close();
  }
}

test('a format-9 Store is upgraded, reads as before, and a repack stores content groups with one dictionary', { timeout: 300_000 }, async () => {
  const { path, dir } = await format9Store();
  const ro = Store.open(path, { readonly: true });
  assert.equal(ro.info.formatVersion, 9);
  ro.close();
  const before = contentOf(path, dir);
  const c = Client.connect(path);
  const upgraded = Store.open(path, { readonly: true });
  assert.equal(upgraded.info.formatVersion, FORMAT_VERSION);
  upgraded.close();
  await c.repack();
  assertIntact(c);
  c.close();
  assertSameContent(path, dir, before);
  const dicts = ids(path, 'kind = ?', ObjectKind.Dictionary);
  assert.equal(dicts.length, 1);
  const coded = ids(path, 'codec = ?', Codec.Dict);
  assert.ok(coded.length > 100, `${coded.length} objects in dictionary frames`);
  const db = new Database(path, { readonly: true });
  // Format 12: the rows name the dictionary by a one-byte ref the dictionaries table resolves.
  const bases = new Set((db.prepare('SELECT DISTINCT hex(base) FROM objects WHERE codec = ?').pluck().all(Codec.Dict) as string[]));
  const named = db.prepare('SELECT hex(id) FROM dictionaries WHERE hex(ref) = ?').pluck();
  assert.deepEqual([...bases].map((b) => [b.length, named.get(b)]), [[2, dicts[0]!.toString('hex').toUpperCase()]]);
  db.close();
});

test('a damaged dictionary: every object of its frames fails to read with ERR_CORRUPT and verify names each', { timeout: 300_000 }, async () => {
  const { path } = await format9Store();
  const c = Client.connect(path);
  await c.repack();
  c.close();
  const dict = ids(path, 'kind = ?', ObjectKind.Dictionary)[0]!;
  const coded = ids(path, 'codec = ?', Codec.Dict);
  damageStored(path, dict, Codec.Zstd, 0x20);
  const s = Store.open(path, { readonly: true });
  try {
    for (const id of coded) assert.throws(() => s.objects.get(id), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT');
  } finally {
    s.close();
  }
  const c2 = Client.connect(path);
  try {
    const v = c2.verify();
    assert.equal(v.ok, false);
    const named = new Set(v.damaged.map((d) => d.objectId));
    // Every dictionary-coded object a state reaches is named (all of them: the fixture has no garbage).
    for (const id of coded) assert.ok(named.has(id.toString('hex')), `verify names ${id.toString('hex')}`);
  } finally {
    c2.close();
  }
});

test('dictionary frames travel to another Store after their dictionary, or whole when it is not sent', { timeout: 300_000 }, async () => {
  const { path, dir } = await format9Store();
  const c = Client.connect(path);
  await c.repack();
  c.close();
  const dict = ids(path, 'kind = ?', ObjectKind.Dictionary)[0]!;
  const coded = ids(path, 'codec = ?', Codec.Dict).slice(0, 200);
  const src = Store.open(path, { readonly: true });
  try {
    for (const withDict of [true, false]) {
      const dst = Store.create(join(dir, `dst-${withDict}.layerfs`));
      try {
        const source = new FrameSource(src);
        const order = withDict ? [dict, ...coded] : coded;
        const sent = new Set<string>();
        // As lib/remote decides: whole unless every base is there or sent before it.
        const whole = (_id: Buffer, loc: { base: Buffer | null }) => !(loc.base && sent.has(loc.base.toString('hex')));
        for (const id of order) {
          await insertFrames(dst, src.read(() => source.frames([id], whole)));
          sent.add(id.toString('hex'));
        }
        const codecOf = dst.db.prepare('SELECT codec FROM objects WHERE id = ?').pluck();
        for (const id of coded) {
          assert.ok(dst.objects.get(id).equals(src.objects.get(id)));
          assert.equal(codecOf.get(id) === Codec.Dict, withDict);
        }
      } finally {
        dst.close();
      }
    }
  } finally {
    src.close();
  }
});

test('repack flattens delta chains to one link; each version reads back; a damaged root fails every version with ERR_CORRUPT', { timeout: 300_000 }, async () => {
  const dir = tempDir('layerfs-flat-');
  const path = join(dir, 's.layerfs');
  const s = Store.create(path);
  const line = (i: number) => `export function handler${i}(req, res) { return res.status(200).json({ id: ${i}, ok: true }); }\n`;
  const first = Buffer.from(Array.from({ length: 220 }, (_, i) => line(i)).join(''));
  const versions = hintedChain(s, first, 50, (prev, v) => {
    const text = prev.toString();
    const at = (v * 7919) % (text.length - 64);
    return Buffer.from(`${text.slice(0, at)}/* release ${v} */${text.slice(at + 8)}`);
  });
  const deepest = Math.max(...versions.map(([id]) => depthOf(s, id)));
  assert.ok(deepest > 1, `chains as written: ${deepest} links`);
  // Without the base selection (repack-bases.test.ts covers it), every chain is flattened. The
  // flattened deltas take more bytes than the chain did (the Store holds nothing else that a
  // repack would shrink), which a repack undoes unless told otherwise (repack.test.ts).
  const r = await repackStore(s, { select: false, neverGrow: false });
  assert.ok(r.flattened > 0);
  for (const [id, bytes] of versions) {
    assert.ok(depthOf(s, id) <= 1);
    assert.ok(s.objects.get(id, ObjectKind.Blob).equals(bytes));
  }
  s.close();
  assertStoreIntact(path);
  const root = versions[0]![0];
  const db = new Database(path, { readonly: true });
  const dependents = db.prepare('SELECT id FROM objects WHERE base = ?').pluck().all(root) as Buffer[];
  const rootCodec = db.prepare('SELECT codec FROM objects WHERE id = ?').pluck().get(root) as Codec;
  db.close();
  assert.ok(dependents.length > 40, `${dependents.length} versions are deltas against the first`);
  damageStored(path, root, rootCodec, 0x08);
  const ro = Store.open(path, { readonly: true });
  try {
    for (const id of dependents) assert.throws(() => ro.objects.get(id), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT');
  } finally {
    ro.close();
  }
});

test('a large transaction on a Store without a dictionary trains one; later transactions compress content with it; gc keeps the current one', { timeout: 300_000 }, async () => {
  const dir = tempDir('layerfs-wdict-');
  const path = join(dir, 's.layerfs');
  const s = Store.create(path);
  const words = ['const', 'return', 'function', 'value', 'index', 'layer', 'store', 'export', 'import', 'await', 'module', 'require'];
  const text = (seed: number, n: number) => {
    let x = seed * 2654435761;
    const out: string[] = [];
    let len = 0;
    while (len < n) {
      x = (x * 1103515245 + 12345) >>> 0;
      const w = `${words[x % words.length]!}${x % 7 === 0 ? `${seed}` : ''} `;
      out.push(w);
      len += w.length;
    }
    return Buffer.from(out.join('').slice(0, n));
  };
  try {
    const first = s.writeSync((w) => Array.from({ length: 2100 }, (_, i) => w.add(ObjectKind.Blob, text(i + 1, 600 + (i % 50) * 40))));
    const dict = s.db.prepare("SELECT value FROM meta WHERE key = 'dictionary'").pluck().get() as string | undefined;
    assert.ok(dict, 'the import-sized transaction trained a dictionary');
    const codec = s.db.prepare('SELECT codec FROM objects WHERE id = ?').pluck();
    assert.equal(codec.get(first[0]!), Codec.Zstd, 'its own groups were sealed before the dictionary existed');
    const later = s.writeSync((w) => Array.from({ length: 40 }, (_, i) => w.add(ObjectKind.Blob, text(5000 + i, 900))));
    // Format 12: the rows name it by a ref into the dictionaries table (made by this write).
    const codecOf = s.db.prepare('SELECT codec, hex(coalesce((SELECT d.id FROM dictionaries d WHERE d.ref = o.base), o.base)) AS base FROM objects o WHERE o.id = ?');
    for (const id of later) assert.deepEqual(codecOf.get(id), { codec: Codec.Dict, base: dict.toUpperCase() });
    for (const [i, id] of later.entries()) assert.ok(s.objects.get(id, ObjectKind.Blob).equals(text(5000 + i, 900)));
  } finally {
    s.close();
  }
  // The current dictionary is a gc root even before a frame names it: a gc between the import
  // that trained it and the next commit must not take it.
  const c = Client.connect(path);
  try {
    await c.gc();
  } finally {
    c.close();
  }
  const db = new Database(path, { readonly: true });
  try {
    const hex = db.prepare("SELECT value FROM meta WHERE key = 'dictionary'").pluck().get() as string;
    assert.ok(db.prepare('SELECT 1 FROM objects WHERE id = ?').pluck().get(Buffer.from(hex, 'hex')), 'gc kept the current dictionary');
  } finally {
    db.close();
  }
  assertStoreIntact(path);
});
