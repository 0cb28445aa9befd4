/**
 * Files replaced in a Workspace (written elsewhere and renamed over, as rsync and package
 * managers do), committed from either projection: a small file becomes a delta against the blob
 * it replaced; a large file's new chunks become deltas against the old version's chunks at the
 * same place (lib/store/chunk-delta.ts), though its edits shift everything after them. Export is byte-identical, verify re-hashes through
 * the deltas, and a damaged base is reported for every chunk that decodes through it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { LayerFsError } from '../../lib/errors.js';
import { fuseAvailable } from '../../lib/fuse/index.js';
import { Codec, idOf, ObjectKind, Store } from '../../lib/store/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

const SEED = 19;

/** ~1.5 MB of text-like lines from a seed (words drawn from a small vocabulary, as in code). */
function release(seed: number, lines: number): string[] {
  const words = ['const', 'return', 'function', 'value', 'this', 'export', 'import', 'from', 'if', 'else', 'await', 'node', 'index', 'length'];
  const r = seededBytes(seed, lines * 12);
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    const n = 4 + (r[i * 12]! % 8);
    const parts: string[] = [];
    for (let k = 1; k <= n; k++) parts.push(words[r[i * 12 + k]! % words.length]!);
    out.push(`${parts.join(' ')} ${i * 7919 % 100003};`);
  }
  return out;
}

/** The next release: a version string changed on every 500th line, lines inserted and removed. */
function nextRelease(lines: string[]): string[] {
  const out: string[] = [];
  lines.forEach((l, i) => {
    if (i % 3000 === 1500) return; // removed
    out.push(i % 500 === 0 ? l.replace(';', ' // v2.0.1;') : l);
    if (i % 4000 === 10) out.push('inserted line for the next release of this file;');
  });
  return out;
}

function chunkCodecs(path: string): Map<number, number> {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare('SELECT codec, count(*) AS n FROM objects WHERE kind = ? GROUP BY codec').all(ObjectKind.Chunk) as { codec: number; n: number }[];
    return new Map(rows.map((r) => [r.codec, r.n]));
  } finally {
    db.close();
  }
}

const fuseSkip = !fuseAvailable().ok ? `FUSE is not usable here: ${fuseAvailable().reason}` : process.getuid?.() !== 0 ? 'needs root (kernel backend)' : false;

for (const projection of ['materialize', 'fuse'] as const) {
  test(`${projection}: replaced files are stored as deltas against the versions they replaced (seed ${SEED})`, { skip: projection === 'fuse' && fuseSkip, timeout: 120_000 }, () => replacedFiles(projection));
}

function blobCodec(path: string, data: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare('SELECT codec FROM objects WHERE id = ?').pluck().get(idOf(ObjectKind.Blob, Buffer.from(data))) as number;
  } finally {
    db.close();
  }
}

async function replacedFiles(projection: 'materialize' | 'fuse'): Promise<void> {
  const dir = tempDir();
  const src = join(dir, 'src');
  fs.mkdirSync(src);
  const a = release(SEED, 40_000).join('\n');
  const b = nextRelease(a.split('\n')).join('\n');
  const smallA = release(SEED + 1, 600).join('\n');
  const smallB = nextRelease(smallA.split('\n')).join('\n');
  fs.writeFileSync(join(src, 'bundle.js'), a);
  fs.writeFileSync(join(src, 'small.js'), smallA);
  const store = join(dir, 's.sqlite');
  const client = Client.create(store);
  try {
    const init = await client.initLayerStack({ name: 'p', source: src });
    client.forkBranch({ name: 'main', layer: init.layer.id });
    const at = join(dir, 'ws');
    const ws = await client.createWorkspace('main', { at, projection });
    const before = chunkCodecs(store);
    assert.equal(before.get(Codec.Delta) ?? 0, 0);
    // Replaced, not edited in place: a new inode renamed over the old path.
    fs.writeFileSync(join(at, 'bundle.js.tmp'), b);
    fs.renameSync(join(at, 'bundle.js.tmp'), join(at, 'bundle.js'));
    fs.writeFileSync(join(at, '.small.js.XXXX'), smallB);
    fs.renameSync(join(at, '.small.js.XXXX'), join(at, 'small.js'));
    const c = await client.commitWorkspace(ws.id, { message: 'next release' });
    assert.equal(c.outcome, 'Created');
    const after = chunkCodecs(store);
    const deltas = after.get(Codec.Delta) ?? 0;
    const freshChunks = [...after.values()].reduce((s, n) => s + n, 0) - [...before.values()].reduce((s, n) => s + n, 0);
    // The edits touch every part of the file: most chunks are new, and most of those are deltas.
    assert.ok(freshChunks > 20, `new chunks ${freshChunks}`);
    assert.ok(deltas >= freshChunks * 0.8, `${deltas} of ${freshChunks} new chunks are deltas`);
    assert.ok(c.bytesInserted! < b.length, `bytes inserted ${c.bytesInserted}`);
    assert.equal(blobCodec(store, smallB), Codec.Delta, 'the replaced small file is a delta');
    await client.endWorkspace(ws.id);
    const out = join(dir, 'out');
    client.export('main', out);
    assert.ok(fs.readFileSync(join(out, 'bundle.js')).equals(Buffer.from(b)), 'export is byte-identical');
    assert.ok(fs.readFileSync(join(out, 'small.js')).equals(Buffer.from(smallB)), 'export is byte-identical');
    assertIntact(client);
  } finally {
    if (projection === 'fuse') await client.stopDaemon({ discard: true }).catch(() => {});
    client.close();
  }

  // Damage the old chunk that most deltas name as base (its frame may hold neighbours too):
  // verify reports every delta one of whose bases no longer reads.
  const db = new Database(store);
  let deltas: { id: Buffer; base: Buffer }[];
  try {
    deltas = db.prepare('SELECT id, base FROM objects WHERE kind = ? AND codec = ?').all(ObjectKind.Chunk, Codec.Delta) as { id: Buffer; base: Buffer }[];
    const uses = new Map<string, number>();
    for (const d of deltas) for (let i = 0; i < d.base.length; i += 32) {
      const k = d.base.subarray(i, i + 32).toString('hex');
      uses.set(k, (uses.get(k) ?? 0) + 1);
    }
    const victim = [...uses].sort((x, y) => y[1] - x[1])[0]![0];
    const loc = db.prepare('SELECT pack, offset, length FROM objects WHERE id = ?').get(Buffer.from(victim, 'hex')) as { pack: number; offset: number; length: number };
    const data = Buffer.from(db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(loc.pack) as Buffer);
    data[loc.offset + (loc.length >> 1)]! ^= 0x40;
    db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(data, loc.pack);
  } finally {
    db.close();
  }
  const s = Store.open(store, { readonly: true });
  const unreadable = (id: Buffer): boolean => {
    try {
      s.objects.get(id);
      return false;
    } catch (e) {
      if (e instanceof LayerFsError && e.code === 'ERR_CORRUPT') return true;
      throw e;
    }
  };
  // A dependent is a delta with an unreadable base that does not read either: a delta whose
  // frame copies only undamaged bytes of its bases still reads (its own hash authenticates it).
  const dependents = deltas.filter((d) => [...Array(d.base.length / 32).keys()].some((i) => unreadable(d.base.subarray(i * 32, i * 32 + 32))) && unreadable(d.id));
  s.close();
  assert.ok(dependents.length > 0, 'the damaged base has dependents');
  const c2 = Client.connect(store, { readonly: true });
  try {
    const r = c2.verify();
    assert.equal(r.ok, false);
    const named = new Set(r.damaged.map((d) => d.objectId));
    for (const d of dependents) assert.ok(named.has(d.id.toString('hex')), `dependent ${d.id.toString('hex')} reported`);
  } finally {
    c2.close();
  }
}
