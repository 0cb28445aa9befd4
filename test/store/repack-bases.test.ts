/**
 * Repack's base selection (lib/store/repack-bases.ts): small files of two releases imported as
 * two unrelated states (no delta hint ever given) become deltas against the same path's other
 * version or a file of the same name nearby; chains stay within SELECT_DEPTH; every state
 * exports byte-identical afterwards; verify passes; a damaged base fails every object whose
 * chain passes through it; a SIGKILL at seeded points leaves every object readable.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { LayerFsError } from '../../lib/errors.js';
import { Codec, ObjectKind, Store } from '../../lib/store/index.js';
import { SELECT_DEPTH } from '../../lib/store/repack-bases.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { damageStored, depthOf } from '../helpers/deltas.js';
import { assertSameContent, contentOf, readAllObjects } from '../helpers/repack.js';
import { rng } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const SEED = 19;
const worker = fileURLToPath(new URL('./repack-worker.ts', import.meta.url));

/** Package-like trees: `pkgN/{index.js,util.js,README.md}`, release 2 editing a few lines of each. */
function release(dir: string, version: number, next: () => number): void {
  const words = ['const', 'return', 'export', 'function', 'await', 'module', 'value', 'layer', 'options', 'request'];
  for (let p = 0; p < 24; p++) {
    for (const file of ['index.js', 'util.js', 'README.md']) {
      const lines: string[] = [];
      for (let i = 0; i < 160; i++) {
        const w = (k: number) => words[(p * 7 + i * 3 + k * (file.length + 1)) % words.length];
        const edited = version > 1 && (i * 13 + p) % 37 === 0;
        lines.push(`${w(0)} ${w(1)}_${i} = ${w(2)}(${edited ? `'v${version}', ${Math.floor(next() * 1000)}` : `${p}, ${i}`}); // ${file} ${w(3)}`);
      }
      mkdirSync(join(dir, `pkg${p}`), { recursive: true });
      writeFileSync(join(dir, `pkg${p}`, file), `${lines.join('\n')}\n`);
    }
  }
}

async function twoReleases(dir: string): Promise<string> {
  const next = rng(SEED);
  release(join(dir, 'a'), 1, next);
  release(join(dir, 'b'), 2, next);
  const store = join(dir, 's.layerfs');
  const c = Client.create(store);
  await c.initLayerStack({ name: 'a', source: join(dir, 'a') });
  await c.initLayerStack({ name: 'b', source: join(dir, 'b') });
  c.close();
  return store;
}

test(`base selection: two releases with no delta hints become deltas within ${SELECT_DEPTH} links; content and exports unchanged (seed ${SEED})`, { timeout: 300_000 }, async () => {
  const dir = tempDir('layerfs-select-');
  const store = await twoReleases(dir);
  const before = contentOf(store, dir);
  const s0 = Store.open(store, { readonly: true });
  assert.equal(s0.db.prepare('SELECT count(*) FROM objects WHERE codec = ?').pluck().get(Codec.Delta), 0, 'imports write no deltas');
  s0.close();

  const c = Client.connect(store);
  const r = await c.repack();
  assertIntact(c);
  c.close();
  assertSameContent(store, dir, before);

  const s = Store.open(store, { readonly: true });
  const deltas = s.db.prepare('SELECT id FROM objects WHERE kind = ? AND codec = ?').pluck().all(ObjectKind.Blob, Codec.Delta) as Buffer[];
  // 144 small files; at least the 72 of one release are deltas of the other's.
  assert.ok(deltas.length >= 72, `${deltas.length} small files stored as deltas (repack: ${JSON.stringify(r)})`);
  for (const id of deltas) assert.ok(depthOf(s, id) <= SELECT_DEPTH, `chain of ${id.toString('hex')}: ${depthOf(s, id)} links`);
  s.close();

  // Without the selection the same Store repacks with no small-file deltas and is larger.
  const plain = await twoReleases(tempDir('layerfs-select-plain-'));
  const sp = Store.open(plain);
  const rp = await sp.repack({ select: false });
  sp.close();
  assert.ok(r.fileBytesAfter < rp.fileBytesAfter, `selected ${r.fileBytesAfter} < plain ${rp.fileBytesAfter}`);
});

test(`base selection: a damaged base fails every object whose chain passes through it (seed ${SEED})`, { timeout: 300_000 }, async () => {
  const dir = tempDir('layerfs-select-dmg-');
  const store = await twoReleases(dir);
  const c = Client.connect(store);
  await c.repack();
  c.close();
  const db = new Database(store, { readonly: true });
  const rows = db.prepare('SELECT id, base FROM objects WHERE kind = ? AND codec = ?').all(ObjectKind.Blob, Codec.Delta) as { id: Buffer; base: Buffer }[];
  const codecOf = db.prepare('SELECT codec FROM objects WHERE id = ?').pluck();
  // The whole object with the most dependents, direct or not.
  const baseOf = new Map(rows.map((r) => [r.id.toString('hex'), r.base.toString('hex')]));
  const rootOf = (id: string): string => (baseOf.has(id) ? rootOf(baseOf.get(id)!) : id);
  const dependents = new Map<string, string[]>();
  for (const r of rows) {
    const root = rootOf(r.id.toString('hex'));
    dependents.set(root, [...(dependents.get(root) ?? []), r.id.toString('hex')]);
  }
  const [root, deps] = [...dependents.entries()].sort((a, b) => b[1].length - a[1].length)[0]!;
  const rootCodec = codecOf.get(Buffer.from(root, 'hex')) as Codec;
  db.close();
  damageStored(store, Buffer.from(root, 'hex'), rootCodec, 0x10);
  assert.ok(deps.length >= 1, 'the base has dependents');
  const ro = Store.open(store, { readonly: true });
  try {
    for (const id of deps) assert.throws(() => ro.objects.get(Buffer.from(id, 'hex')), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT');
  } finally {
    ro.close();
  }
  const c2 = Client.connect(store);
  try {
    const v = c2.verify();
    assert.equal(v.ok, false);
    const named = new Set(v.damaged.map((d) => d.objectId));
    for (const id of deps) assert.ok(named.has(id), `verify names ${id}`);
  } finally {
    c2.close();
  }
});

test(`base selection: SIGKILL at seeded points of a repack leaves every object readable (seed ${SEED})`, { timeout: 300_000 }, async () => {
  const dir = tempDir('layerfs-select-kill-');
  const store = await twoReleases(dir);
  const objects = readAllObjects(store);
  const before = contentOf(store, dir);
  const next = rng(SEED + 1);
  let killed = 0;
  for (let trial = 0; trial < 4; trial++) {
    const after = 1 + Math.floor(next() * 4);
    const delay = Math.floor(next() * 30);
    const child = spawn(process.execPath, nodeArgs(worker, store, String(16 * 1024), '3'), { stdio: ['ignore', 'pipe', 'inherit'] });
    let lines = 0;
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.startsWith('progress') && ++lines === after) setTimeout(() => child.kill('SIGKILL'), delay);
      }
    });
    const code = await new Promise((res) => child.on('exit', (c, sig) => res(sig ?? c)));
    if (code === 'SIGKILL') killed++;
    assertStoreIntact(store);
    assert.deepEqual(readAllObjects(store), objects);
  }
  assert.ok(killed >= 2, `killed mid-repack in ${killed} of 4 trials`);
  // A repack after the crashes finishes the job; the exports are unchanged.
  const c = Client.connect(store);
  await c.repack({ level: 3 });
  assertIntact(c);
  c.close();
  assertSameContent(store, dir, before);
});

test(`base selection: edited random files stay deltas of their other versions; repack does not grow the Store (seed ${SEED})`, { timeout: 300_000 }, async () => {
  const dir = tempDir('layerfs-select-random-');
  const next = rng(SEED + 2);
  const random = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(next() * 256)));
  const a = join(dir, 'a');
  const b = join(dir, 'b');
  mkdirSync(a, { recursive: true });
  mkdirSync(b, { recursive: true });
  for (let i = 0; i < 40; i++) {
    const bytes = random(2000 + Math.floor(next() * 6000));
    writeFileSync(join(a, `r${i}.bin`), bytes);
    // Release b: a 32-byte overwrite at a seeded offset.
    random(32).copy(bytes, Math.floor(next() * (bytes.length - 32)));
    writeFileSync(join(b, `r${i}.bin`), bytes);
  }
  const store = join(dir, 's.layerfs');
  const c = Client.create(store);
  await c.initLayerStack({ name: 'a', source: a });
  await c.initLayerStack({ name: 'b', source: b });
  c.close();
  const before = contentOf(store, dir);
  const s = Store.open(store);
  const r = await s.repack();
  const deltas = s.db.prepare('SELECT count(*) FROM objects WHERE kind = ? AND codec = ?').pluck().get(ObjectKind.Blob, Codec.Delta) as number;
  s.close();
  // One release of each pair is a delta of the other: random bytes share nothing with other
  // files, but almost everything with their other version.
  assert.ok(deltas >= 40, `${deltas} random files stored as deltas (repack: ${JSON.stringify(r)})`);
  assert.ok(r.fileBytesAfter <= r.fileBytesBefore, `${r.fileBytesAfter} <= ${r.fileBytesBefore}`);
  assertStoreIntact(store);
  assertSameContent(store, dir, before);
});
