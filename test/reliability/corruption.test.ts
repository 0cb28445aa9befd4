/**
 * Damage on disk: flipped bytes in object payloads and in pages are found by verify (naming the
 * object and the states that reach it); reads of damaged data fail with ERR_CORRUPT and never
 * return wrong bytes; undamaged states stay readable.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { cli } from '../helpers/cli.js';

/** Flips one byte of the payload of the object whose id starts with `hexId`, in place. */
function flipObject(store: string, hexId: string, at = 0): void {
  const db = new Database(store);
  try {
    const loc = db.prepare('SELECT pack, offset, length FROM objects WHERE id = ?').get(Buffer.from(hexId, 'hex')) as { pack: number; offset: number; length: number };
    const data = Buffer.from(db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(loc.pack) as Buffer);
    const i = loc.offset + (at % loc.length);
    data[i] = data[i]! ^ 0x40;
    db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(data, loc.pack);
  } finally {
    db.close();
  }
}

/**
 * The unit a flip can damage: a zstd frame (codec 1) with every object decoded from it, or the
 * object's own bytes otherwise (docs/FORMAT.md "Physical forms").
 */
function damageUnit(store: string, hexId: string): string {
  const db = new Database(store, { readonly: true });
  try {
    const loc = db.prepare('SELECT codec, pack, offset FROM objects WHERE id = ?').get(Buffer.from(hexId, 'hex')) as { codec: number; pack: number; offset: number };
    return loc.codec === 1 ? `frame ${loc.pack}:${loc.offset}` : `object ${hexId}`;
  } finally {
    db.close();
  }
}

function objectIdsOfKind(store: string, kind: number): string[] {
  const db = new Database(store, { readonly: true });
  try {
    return (db.prepare('SELECT id FROM objects WHERE kind = ?').pluck().all(kind) as Buffer[]).map((b) => b.toString('hex'));
  } finally {
    db.close();
  }
}

test('a flipped byte in a file blob: verify names it and the states reaching it; reads fail typed', async () => {
  const dir = tempDir();
  const store = join(dir, 's.sqlite');
  const a = join(dir, 'a');
  const b = join(dir, 'b');
  mkdirSync(a);
  mkdirSync(b);
  writeFileSync(join(a, 'victim.txt'), 'precious bytes\n');
  writeFileSync(join(a, 'other.txt'), 'other\n');
  writeFileSync(join(b, 'unrelated.txt'), 'unrelated\n');
  const c = Client.create(store);
  const la = await c.initLayerStack({ name: 'a', source: a });
  await c.initLayerStack({ name: 'b', source: b });
  c.close();

  const db = new Database(store, { readonly: true });
  const blob = (db.prepare('SELECT id FROM objects WHERE kind = 1 AND size = 15').pluck().get() as Buffer).toString('hex');
  db.close();
  flipObject(store, blob);

  const c2 = Client.connect(store);
  try {
    const v = c2.verify();
    assert.equal(v.ok, false);
    assert.equal(v.damaged.length, 1);
    assert.equal(v.damaged[0]!.objectId, blob);
    assert.deepEqual(v.damaged[0]!.states, [`layer:${la.layer.id}`]);
    assert.throws(() => c2.cat('a', 'victim.txt'), { code: 'ERR_CORRUPT' });
    assert.equal(c2.cat('a', 'other.txt').toString(), 'other\n');
    assert.equal(c2.cat('b', 'unrelated.txt').toString(), 'unrelated\n');
    assert.throws(() => c2.export('a', join(dir, 'out')), { code: 'ERR_CORRUPT' });
  } finally {
    c2.close();
  }
  const r = cli(['--json', '--store', store, 'verify']);
  assert.equal(r.code, 1);
  assert.equal(r.json.damaged[0].objectId, blob);
});

test('damaged pages and chunks are found; every page flip is detected', async () => {
  const dir = tempDir();
  const store = join(dir, 's.sqlite');
  const src = join(dir, 'src');
  mkdirSync(join(src, 'sub'), { recursive: true });
  for (let i = 0; i < 300; i++) writeFileSync(join(src, 'sub', `f${i}`), `file ${i}\n`);
  writeFileSync(join(src, 'large.bin'), seededBytes(3, 400_000));
  const c = Client.create(store);
  await c.initLayerStack({ name: 'p', source: src });
  c.close();
  const pages = objectIdsOfKind(store, 4);
  const chunks = objectIdsOfKind(store, 2);
  assert.ok(pages.length > 3 && chunks.length > 3);
  for (const [i, id] of [pages[0]!, pages[pages.length - 1]!, chunks[1]!].entries()) flipObject(store, id, 7 + i);
  const c2 = Client.connect(store);
  try {
    const v = c2.verify();
    assert.equal(v.ok, false);
    // A damaged page hides what lies below it, so verify names the highest damaged object on
    // each path: one in a unit that was flipped (the object, or the compressed frame it shares
    // with its group), and nothing else.
    const flipped = new Set([pages[0]!, pages[pages.length - 1]!, chunks[1]!].map((id) => damageUnit(store, id)));
    assert.ok(v.damaged.length >= 1);
    for (const d of v.damaged) assert.ok(flipped.has(damageUnit(store, d.objectId)), `unexpected damage report ${d.objectId}`);
    assert.throws(() => c2.cat('p', 'large.bin'), { code: 'ERR_CORRUPT' });
  } finally {
    c2.close();
  }
});

test('a damaged object locator or a missing pack row is reported, not trusted', async () => {
  const dir = tempDir();
  const store = join(dir, 's.sqlite');
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'x'), 'x'.repeat(1000));
  const c = Client.create(store);
  await c.initLayerStack({ name: 'p', source: src });
  c.close();
  const db = new Database(store);
  db.prepare('UPDATE objects SET length = length + 5, size = size + 5 WHERE kind = 1').run();
  db.close();
  const c2 = Client.connect(store);
  try {
    assert.throws(() => c2.cat('p', 'x'), { code: 'ERR_CORRUPT' });
    assert.equal(c2.verify().ok, false);
  } finally {
    c2.close();
  }
});
