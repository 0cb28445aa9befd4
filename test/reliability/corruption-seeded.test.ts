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
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

const SEEDS = (process.env.LAYERFS_CORRUPTION_SEEDS ?? '1,2,3,4,5,6').split(',').map(Number);

function rng(seed: number): () => number {
  let x = seed * 2654435761;
  return () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
}

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

/** Three LayerStacks with different content, each with a Branch of two Commits, one Added. */
async function buildStore(dir: string): Promise<{ store: string; states: string[] }> {
  const store = join(dir, 'pristine.sqlite');
  const c = Client.create(store);
  for (let s = 0; s < 3; s++) {
    const src = join(dir, `src${s}`);
    mkdirSync(join(src, 'sub/deeper'), { recursive: true });
    for (let i = 0; i < 60; i++) writeFileSync(join(src, i % 3 ? 'sub' : '', `f${i}.txt`), seededBytes(s * 100 + i + 1, 30 + ((i * 53) % 40) * 25));
    writeFileSync(join(src, 'sub/deeper/large.bin'), seededBytes(900 + s, 300_000));
    symlinkSync('sub/f1.txt', join(src, 'link'));
    const layer = (await c.initLayerStack({ name: `s${s}`, source: src })).layer.id;
    c.forkBranch({ name: `b${s}`, layer });
    const ws = await c.createWorkspace(`b${s}`, { at: join(dir, `ws${s}`) });
    for (let k = 0; k < 2; k++) {
      writeFileSync(join(ws.path, `edit${k}.txt`), `stack ${s} edit ${k}\n`);
      writeFileSync(join(ws.path, 'sub/deeper/large.bin'), seededBytes(950 + s * 10 + k, 200_000 + k * 1000));
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

/** Flips one byte inside each chosen object's stored bytes (its pack row range). */
function flipObjects(store: string, r: () => number, count: number): string[] {
  const db = new Database(store);
  try {
    const rows = db.prepare('SELECT id, kind, pack, offset, length FROM objects WHERE length > 0 ORDER BY id').all() as { id: Buffer; kind: number; pack: number; offset: number; length: number }[];
    const kinds = [...new Set(rows.map((x) => x.kind))].sort();
    const hit: string[] = [];
    for (let i = 0; i < count; i++) {
      // Alternate kinds so tree pages and file content both get hit.
      const ofKind = rows.filter((x) => x.kind === kinds[i % kinds.length]);
      const o = ofKind[Math.floor(r() * ofKind.length)]!;
      const data = Buffer.from(db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(o.pack) as Buffer);
      const at = o.offset + Math.floor(r() * o.length);
      data[at] = data[at]! ^ (1 << Math.floor(r() * 8));
      db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(data, o.pack);
      hit.push(o.id.toString('hex'));
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
    return hit;
  } finally {
    db.close();
  }
}

/** Flips one byte in each of `count` SQLite pages of the file (never the 100-byte header). */
function flipFilePages(store: string, r: () => number, count: number): void {
  const fd = openSync(store, 'r+');
  try {
    const size = fstatSync(fd).size;
    const b = Buffer.alloc(1);
    for (let i = 0; i < count; i++) {
      const at = 100 + Math.floor(r() * (size - 100));
      readSync(fd, b, 0, 1, at);
      b[0] = b[0]! ^ (1 << Math.floor(r() * 8));
      writeSync(fd, b, 0, 1, at);
    }
  } finally {
    closeSync(fd);
  }
}

test(`seeded byte flips in stored objects and pages (seeds ${SEEDS.join(',')}): verify names them; reads are exact or ERR_CORRUPT`, { timeout: 300_000 }, async (t) => {
  const dir = tempDir();
  const { store: pristine, states } = await buildStore(dir);
  assert.equal(existsSync(`${pristine}-wal`) && fstatSync(openSync(`${pristine}-wal`, 'r')).size > 0, false, 'the pristine Store is checkpointed');
  const c0 = Client.connect(pristine);
  const truth = new Map(states.map((s) => [s, readState(c0, refOf(s))]));
  c0.close();
  let damagedStates = 0;
  let intactStates = 0;
  for (const seed of SEEDS) {
    const r = rng(seed);
    const store = join(dir, `seed${seed}.sqlite`);
    copyFileSync(pristine, store);
    const fileFlips = seed % 3 === 0; // every third seed damages SQLite pages of the file instead
    const hit = fileFlips ? [] : flipObjects(store, r, 1 + (seed % 3));
    if (fileFlips) flipFilePages(store, r, 2);
    let c: Client;
    try {
      c = Client.connect(store);
    } catch (e) {
      // Damage in the schema or header pages: refused, typed.
      assert.ok(isLayerFsError(e, 'ERR_CORRUPT') || isLayerFsError(e, 'ERR_NOT_A_STORE'), `seed ${seed}: ${String(e)}`);
      continue;
    }
    try {
      let v: ReturnType<Client['verify']> | undefined;
      try {
        v = c.verify();
      } catch (e) {
        assert.ok(isLayerFsError(e, 'ERR_CORRUPT'), `seed ${seed}: verify threw ${String(e)}`);
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
      t.diagnostic(`seed ${seed}: ${fileFlips ? 'file pages' : `objects ${hit.map((h) => h.slice(0, 8)).join(',')}`}; verify ${v.ok ? 'ok' : `${v.damaged.length} damaged, sqlite ${v.sqliteCheck.slice(0, 40)}`}; ${failing.size}/${states.length} states unreadable`);
    } finally {
      c.close();
    }
  }
  t.diagnostic(`${damagedStates} damaged and ${intactStates} intact state reads over ${SEEDS.length} seeds`);
  assert.ok(damagedStates > 0 && intactStates > 0);
});
