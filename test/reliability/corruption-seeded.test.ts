/**
 * Seeded damage on disk, written against behaviour (objects found through SQL on the objects
 * and packs tables, whatever their physical format): bytes flipped inside stored objects —
 * tree pages and file content — and inside SQLite pages of the file. For every state (Layer or
 * Commit) a full read (ls of every directory, cat of every file) either returns exactly the
 * bytes that were stored or fails with ERR_CORRUPT; never other bytes, never an untyped error.
 * `verify` names the damaged objects and exactly the states whose full read fails, and every
 * state it does not name reads back complete.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, openSync, readSync, writeSync, closeSync, fstatSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { chunkLengths } from '../../lib/native/index.js';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { rng } from '../helpers/random.js';

const SEEDS = (process.env.LAYERFS_CORRUPTION_SEEDS ?? '1,2,3,4,5,6,7,8').split(',').map(Number);

type Truth = Map<string, string | Buffer>; // path → file bytes, 'dir', or 'symlink:target'

/** Everything a state holds, read through the SDK. */
function readState(c: Client, ref: string): Truth {
  const out: Truth = new Map();
  const walk = (dir: string) => {
    for (const e of c.ls(ref, dir || undefined)) {
      const p = dir ? `${dir}/${e.name}` : e.name;
      if (e.kind === 'dir') {
        out.set(p, 'dir');
        walk(p);
      } else if (e.kind === 'file') out.set(p, c.cat(ref, p));
      else out.set(p, `${e.kind}:${e.target ?? ''}`);
    }
  };
  walk('');
  return out;
}

function sameTruth(a: Truth, b: Truth): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) {
    const w = b.get(k);
    if (w === undefined) return false;
    if (Buffer.isBuffer(v) ? !(Buffer.isBuffer(w) && v.equals(w)) : v !== w) return false;
  }
  return true;
}

/** Compressible text: lines that differ in their numbers only. */
function text(seed: number, bytes: number): Buffer {
  let out = '';
  for (let k = 0; out.length < bytes; k++) out += `line ${k} of file ${seed}: the quick brown fox jumps over the lazy dog ${(k * 7919 + seed) % 1000}\n`;
  return Buffer.from(out.slice(0, bytes));
}

/**
 * Three LayerStacks with different content, each with a Branch of two Commits, one Added. Text
 * (stored in compressed groups), random bytes (stored raw) and files edited by the Commits
 * (stored as deltas against their previous version), so every physical form gets damaged.
 */
async function buildStore(dir: string): Promise<{ store: string; states: string[] }> {
  const store = join(dir, 'pristine.sqlite');
  const c = Client.create(store);
  for (let s = 0; s < 3; s++) {
    const src = join(dir, `src${s}`);
    mkdirSync(join(src, 'sub/deeper'), { recursive: true });
    for (let i = 0; i < 60; i++) {
      const size = 300 + ((i * 53) % 40) * 40;
      writeFileSync(join(src, i % 3 ? 'sub' : '', `f${i}.txt`), i % 2 ? text(s * 100 + i, size) : seededBytes(s * 100 + i + 1, size));
    }
    writeFileSync(join(src, 'sub/deeper/large.txt'), text(900 + s, 300_000));
    writeFileSync(join(src, 'sub/deeper/large.bin'), seededBytes(950 + s, 600_000));
    symlinkSync('sub/f1.txt', join(src, 'link'));
    const layer = (await c.initLayerStack({ name: `s${s}`, source: src })).layer.id;
    c.forkBranch({ name: `b${s}`, layer });
    const ws = await c.createWorkspace(`b${s}`, { at: join(dir, `ws${s}`) });
    for (let k = 0; k < 2; k++) {
      writeFileSync(join(ws.path, `edit${k}.txt`), `stack ${s} edit ${k}\n`);
      for (const i of [1, 5, 7]) writeFileSync(join(ws.path, 'sub', `f${i}.txt`), Buffer.concat([text(s * 100 + i, 300 + ((i * 53) % 40) * 40), Buffer.from(`edit ${k}\n`)]));
      const large = text(900 + s, 300_000);
      large.write(`edited ${k}`, 150_000 + k * 7);
      writeFileSync(join(ws.path, 'sub/deeper/large.txt'), large);
      // Random bytes edited in three places, each the 64 bytes before an old cut point (they
      // decide the cut): the re-cut chunks straddle old ones and become deltas against the
      // several old chunks each overlaps (format 3's multi-base deltas).
      const bin = seededBytes(950 + s, 600_000);
      const cuts = chunkLengths(bin).reduce<number[]>((acc, n) => [...acc, (acc[acc.length - 1] ?? 0) + n], []);
      for (const i of [5, 15, 25]) seededBytes(i * 10 + k + s, 64).copy(bin, cuts[i]! - 64);
      writeFileSync(join(ws.path, 'sub/deeper/large.bin'), bin);
      assert.equal((await c.commitWorkspace(ws.id)).outcome, 'Created');
    }
    await c.endWorkspace(ws.id, { discard: true });
    if (s === 0) assert.equal(c.add('b0').outcome, 'Added');
  }
  const states = [...c.layers().map((l) => `layer:${l.id}`), ...c.branches().flatMap((b) => c.log(b.id).map((x) => `commit:${x.id}`))];
  c.close();
  return { store, states };
}

const refOf = (state: string) => state.slice(state.indexOf(':') + 1);

/** Physical forms present (objects.codec when the format has it, else one form). */
function forms(store: string): Map<string, number> {
  const db = new Database(store, { readonly: true });
  try {
    const hasCodec = (db.prepare("SELECT name FROM pragma_table_info('objects')").pluck().all() as string[]).includes('codec');
    const rows = db.prepare(`SELECT ${hasCodec ? 'codec' : '0'} AS form, kind, ${hasCodec ? 'coalesce(length(base), 0) / 32' : '0'} AS bases, count(*) AS n FROM objects GROUP BY 1, 2, 3`).all() as { form: number; kind: number; bases: number; n: number }[];
    const m = new Map(rows.map((r) => [`form ${r.form} kind ${r.kind}${r.bases > 1 ? ` bases ${r.bases}` : ''}`, r.n]));
    m.set('SQLite pages', db.pragma('page_count', { simple: true }) as number);
    m.set('free pages', db.pragma('freelist_count', { simple: true }) as number);
    return m;
  } finally {
    db.close();
  }
}

/**
 * Flips one byte inside each chosen object's stored bytes (its range of its pack row). Targets
 * rotate over physical form × kind, so raw objects, compressed groups and deltas, tree pages and
 * file content all get hit.
 */
function flipObjects(store: string, r: () => number, count: number, start: number): string[] {
  const db = new Database(store);
  try {
    const hasCodec = (db.prepare("SELECT name FROM pragma_table_info('objects')").pluck().all() as string[]).includes('codec');
    const rows = db.prepare(`SELECT id, kind, ${hasCodec ? 'codec' : '0'} AS form, ${hasCodec ? 'coalesce(length(base), 0) / 32' : '0'} AS bases, pack, offset, length FROM objects WHERE length > 0 ORDER BY id`).all() as {
      id: Buffer;
      kind: number;
      form: number;
      bases: number;
      pack: number;
      offset: number;
      length: number;
    }[];
    const cls = (x: { form: number; kind: number; bases: number }) => `${x.form}/${x.kind}/${Math.min(x.bases, 2)}`;
    const classes = [...new Set(rows.map(cls))].sort();
    const hit: string[] = [];
    for (let i = 0; i < count; i++) {
      const target = classes[(start + i) % classes.length]!;
      const ofClass = rows.filter((x) => cls(x) === target);
      const o = ofClass[Math.floor(r() * ofClass.length)]!;
      const data = Buffer.from(db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(o.pack) as Buffer);
      const at = o.offset + Math.floor(r() * o.length);
      data[at] = data[at]! ^ (1 << Math.floor(r() * 8));
      db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(data, o.pack);
      hit.push(`${o.id.toString('hex').slice(0, 8)}(${cls})`);
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
    return hit;
  } finally {
    db.close();
  }
}

/**
 * Flips one byte in each of `count` SQLite pages that hold stored data: overflow pages of pack
 * rows and leaf pages of the packs and objects tables (found with dbstat), inside their payload
 * (a flip in unused space would damage nothing).
 */
function flipFilePages(store: string, r: () => number, count: number): string[] {
  const db = new Database(store, { readonly: true });
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const pages = db
    .prepare("SELECT name, pageno, pagetype, payload FROM dbstat WHERE name IN ('packs', 'objects') AND pagetype IN ('overflow', 'leaf') AND payload > 0 ORDER BY pageno")
    .all() as { name: string; pageno: number; pagetype: string; payload: number }[];
  db.close();
  const fd = openSync(store, 'r+');
  const hit: string[] = [];
  try {
    const b = Buffer.alloc(1);
    for (let i = 0; i < count; i++) {
      const p = pages[Math.floor(r() * pages.length)]!;
      // Overflow pages: a 4-byte next-page pointer, then payload. Leaf pages keep their cells at
      // the end of the page.
      const inPage = p.pagetype === 'overflow' ? 4 + Math.floor(r() * Math.min(p.payload, pageSize - 4)) : pageSize - 1 - Math.floor(r() * p.payload);
      const at = (p.pageno - 1) * pageSize + inPage;
      readSync(fd, b, 0, 1, at);
      b[0] = b[0]! ^ (1 << Math.floor(r() * 8));
      writeSync(fd, b, 0, 1, at);
      hit.push(`${p.name} ${p.pagetype} page ${p.pageno}+${inPage}`);
    }
  } finally {
    closeSync(fd);
  }
  return hit;
}

test(`seeded byte flips in stored objects and pages (seeds ${SEEDS.join(',')}): verify names them; reads are exact or ERR_CORRUPT`, { timeout: 300_000 }, async (t) => {
  const dir = tempDir();
  const { store: pristine, states } = await buildStore(dir);
  assert.equal(existsSync(`${pristine}-wal`) && fstatSync(openSync(`${pristine}-wal`, 'r')).size > 0, false, 'the pristine Store is checkpointed');
  const c0 = Client.connect(pristine);
  const truth = new Map(states.map((s) => [s, readState(c0, refOf(s))]));
  c0.close();
  const present = forms(pristine);
  t.diagnostic(`objects by physical form and kind: ${[...present].map(([k, n]) => `${k}: ${n}`).join(', ')}`);
  assert.ok([...present.keys()].some((k) => k.startsWith('form 2 kind 2 bases')), 'the fixture holds chunk deltas with several bases');
  let classStart = 0; // successive seeds walk through every form × kind
  let damagedStates = 0;
  let intactStates = 0;
  for (const seed of SEEDS) {
    const r = rng(seed);
    const store = join(dir, `seed${seed}.sqlite`);
    copyFileSync(pristine, store);
    const fileFlips = seed % 3 === 0; // every third seed damages SQLite pages of the file instead
    const flips = 2 + (seed % 2);
    const hit = fileFlips ? flipFilePages(store, r, 2) : flipObjects(store, r, flips, classStart);
    if (!fileFlips) classStart += flips;
    let c: Client;
    try {
      c = Client.connect(store);
    } catch (e) {
      // Damage in the schema or header pages: refused, typed.
      assert.ok(isLayerFsError(e, 'ERR_CORRUPT') || isLayerFsError(e, 'ERR_NOT_A_STORE'), `seed ${seed}: ${String(e)}`);
      t.diagnostic(`seed ${seed}: ${hit.join(', ')}; the Store is refused: ${e.code}`);
      continue;
    }
    try {
      let v: ReturnType<Client['verify']> | undefined;
      try {
        v = c.verify();
      } catch (e) {
        assert.ok(isLayerFsError(e, 'ERR_CORRUPT'), `seed ${seed}: verify threw ${String(e)}`);
        t.diagnostic(`seed ${seed}: ${hit.join(', ')}; verify fails with ERR_CORRUPT: ${e.message.slice(0, 80)}`);
      }
      // Every state: exactly its bytes, or ERR_CORRUPT.
      const failing = new Set<string>();
      for (const s of states) {
        let got: Truth;
        try {
          got = readState(c, refOf(s));
        } catch (e) {
          assert.ok(isLayerFsError(e, 'ERR_CORRUPT'), `seed ${seed}, ${s}: ${String(e)}`);
          failing.add(s);
          continue;
        }
        assert.ok(sameTruth(got, truth.get(s)!), `seed ${seed}, ${s}: read back different bytes`);
      }
      damagedStates += failing.size;
      intactStates += states.length - failing.size;
      if (!v) continue;
      const named = new Set(v.damaged.flatMap((d) => d.states));
      if (!fileFlips) {
        // Object flips: verify finds damage, names only objects in damaged pack ranges, and its
        // states are exactly those whose full read fails.
        // (A flipped object no state reaches damages nothing a read or verify would see.)
        assert.equal(v.ok, failing.size === 0, `seed ${seed}: verify ok=${v.ok} but ${failing.size} states fail (flips in ${hit.join(', ')})`);
        for (const d of v.damaged) assert.ok(d.states.length >= 1, `seed ${seed}: ${d.objectId} names no state`);
        assert.deepEqual([...named].sort(), [...failing].sort(), `seed ${seed}: verify's states vs failing reads`);
      } else {
        // SQLite page flips: whatever verify says must cover every failing state.
        for (const s of failing) assert.ok(!v.ok && (named.has(s) || v.sqliteCheck !== 'ok'), `seed ${seed}: ${s} fails but verify does not say so`);
      }
      t.diagnostic(`seed ${seed}: ${fileFlips ? 'SQLite' : 'objects'} ${hit.join(', ')}; verify ${v.ok ? 'ok' : `${v.damaged.length} damaged, sqlite ${v.sqliteCheck.slice(0, 40)}`}; ${failing.size}/${states.length} states unreadable`);
    } finally {
      c.close();
    }
  }
  t.diagnostic(`${damagedStates} damaged and ${intactStates} intact state reads over ${SEEDS.length} seeds`);
  assert.ok(damagedStates > 0 && intactStates > 0);
});
