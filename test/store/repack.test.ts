/**
 * db repack: the physical form changes, nothing else does. Every state's tree and every object
 * read the same afterwards, verify passes, a second repack changes nothing that matters, a
 * SIGKILL at any moment leaves a Store that reads, a writer on another connection loses nothing,
 * and bad input (read-only, newer format) is refused with the Store unchanged. Seeded data.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { Codec, FORMAT_VERSION, ObjectKind, Store } from '../../lib/store/index.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { assertSameContent, contentOf, exportStates, makeHistory, makeSource, readAllObjects } from '../helpers/repack.js';
import { asFormat } from '../helpers/formats.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { walkForCompare } from '../helpers/treewalk.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { rng } from '../helpers/random.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';
import { SELECT_DEPTH } from '../../lib/store/repack-bases.js';
import { depthOf } from '../helpers/deltas.js';

function listSource(root: string, rel = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...listSource(root, p));
    else out.push(p);
  }
  return out.sort();
}

const worker = fileURLToPath(new URL('./repack-worker.ts', import.meta.url));

/** One Store with a history, built once; each test works on its own copy. */
const root = tempDir('layerfs-repack-');
let built: Promise<{ store: string; dir: string }> | undefined;
function fixture(): Promise<{ store: string; dir: string }> {
  built ??= (async () => {
    const dir = root;
    makeSource(join(dir, 'src'));
    const store = join(dir, 'base.layerfs');
    await makeHistory(store, join(dir, 'src'), join(dir, 'ws'));
    return { store, dir };
  })();
  return built;
}

let copies = 0;
async function copyOfFixture(): Promise<{ store: string; dir: string }> {
  const { store, dir } = await fixture();
  const copy = join(dir, `copy-${copies++}.layerfs`);
  // The fixture was closed, so the WAL was checkpointed into the file.
  copyFileSync(store, copy);
  return { store: copy, dir };
}

function sha(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** A digest of the physical form: every index row and pack row (the file header may change with a writable open). */
function physical(path: string): string {
  const db = new Database(path, { readonly: true });
  try {
    const h = createHash('sha256');
    for (const r of db.prepare('SELECT * FROM objects ORDER BY id').raw().iterate()) h.update(JSON.stringify(r, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString('hex') : v)));
    for (const r of db.prepare('SELECT id, data FROM packs ORDER BY id').raw().iterate() as IterableIterator<[number, Buffer]>) h.update(String(r[0])).update(r[1]);
    return h.digest('hex');
  } finally {
    db.close();
  }
}

test('repack keeps every id, object and tree; verify passes; the file shrinks; a second repack is a no-op in content', { timeout: 300_000 }, async () => {
  const { store, dir } = await copyOfFixture();
  const { trees, objects } = contentOf(store, dir);
  const s0 = Store.open(store, { readonly: true });
  const deltas0 = s0.db.prepare('SELECT id, base FROM objects WHERE codec = ? ORDER BY id').all(Codec.Delta);
  s0.close();
  assert.ok(deltas0.length > 0, 'the fixture has deltas');
  const before = statSync(store).size;

  const c = Client.connect(store);
  const seen: string[] = [];
  const r = await c.repack({ onProgress: (p) => seen.push(`${p.phase}:${p.rowsDone}/${p.rowsTotal}`) });
  assertIntact(c);
  c.close();
  assert.equal(r.outcome, 'Repacked');
  assert.equal(r.objects, objects.length);
  assert.ok(r.fileBytesAfter < r.fileBytesBefore, `${r.fileBytesAfter} < ${r.fileBytesBefore}`);
  assert.ok(statSync(store).size < before);
  assert.equal(seen[0], `rewrite:0/${r.rowsBefore}`);
  assert.equal(seen.at(-1), `done:${r.rowsBefore}/${r.rowsBefore}`);
  assert.ok(seen.includes(`vacuum:${r.rowsBefore}/${r.rowsBefore}`));

  assertSameContent(store, dir, { trees, objects });
  // Chains are flattened (a chunk's or page's delta base is a full object now) or, for small
  // files, chosen by the base selection within SELECT_DEPTH links.
  const s1 = Store.open(store, { readonly: true });
  const deltas1 = s1.db.prepare('SELECT id, kind, base FROM objects WHERE codec = ? ORDER BY id').all(Codec.Delta) as { id: Buffer; kind: number; base: Buffer }[];
  for (const d of deltas1) {
    if (d.base.length !== 32) continue;
    const depth = depthOf(s1, d.id);
    assert.ok(d.kind === ObjectKind.Blob ? depth <= SELECT_DEPTH : depth === 1, `a repacked chain of kind ${d.kind}: ${depth} links`);
  }
  assert.ok(deltas1.length > 0, `${deltas1.length} deltas of ${deltas0.length}`);
  // The fixture's small files train a dictionary (ZDICT of the system's libzstd), which content groups use.
  const dictionaries = s1.db.prepare('SELECT count(*) FROM objects WHERE kind = ?').pluck().get(ObjectKind.Dictionary) as number;
  assert.equal(dictionaries, 1);
  assert.ok((s1.db.prepare('SELECT count(*) FROM objects WHERE codec = ?').pluck().get(Codec.Dict) as number) > 0, 'content groups use the dictionary');
  s1.close();

  // A second repack finds only rows the first one wrote: nothing to do.
  const c2 = Client.connect(store);
  const r2 = await c2.repack();
  assert.equal(r2.objects, 0);
  assert.equal(r2.rowsBefore, 0);
  assert.equal(r2.rowsSkipped, r.rowsAfter);
  assert.equal(r2.fileBytesAfter, r.fileBytesAfter);
  // With full it rewrites everything again, to about the same size.
  const r3 = await c2.repack({ full: true });
  assertIntact(c2);
  c2.close();
  assert.equal(r3.objects, objects.length + dictionaries);
  assert.equal(r3.rowsSkipped, 0);
  assert.ok(Math.abs(r3.fileBytesAfter - r.fileBytesAfter) <= r.fileBytesAfter * 0.02, `full second repack ${r3.fileBytesAfter} vs ${r.fileBytesAfter}`);
  assertSameContent(store, dir, { trees, objects });
});

test('a rewrite that would come out larger keeps the old rows: a full repack at level 1 after level 19 grows nothing', { timeout: 300_000 }, async () => {
  const { store, dir } = await copyOfFixture();
  const { trees, objects } = contentOf(store, dir);
  const s = Store.open(store);
  let r1: Awaited<ReturnType<Store['repack']>>;
  let r2: Awaited<ReturnType<Store['repack']>>;
  try {
    r1 = await s.repack();
    r2 = await s.repack({ level: 1, full: true });
  } finally {
    s.close();
  }
  assert.equal(r1.rowsKept, 0);
  assert.ok(r2.rowsKept > 0, `rows kept: ${JSON.stringify(r2)}`);
  assert.ok(r2.storedBytesAfter <= r2.storedBytesBefore, `${r2.storedBytesAfter} <= ${r2.storedBytesBefore}`);
  assert.ok(r2.fileBytesAfter <= r1.fileBytesAfter, `${r2.fileBytesAfter} <= ${r1.fileBytesAfter}`);
  const c = Client.connect(store);
  assertIntact(c);
  // The kept rows are recorded: a repack at level 1 again has nothing to do.
  assert.equal((await c.repack({ level: 1 })).rowsBefore, 0);
  c.close();
  assertSameContent(store, dir, { trees, objects });
});

test('a repack planned a few rows at a time (planObjects) rewrites every object once, content unchanged', { timeout: 120_000 }, async () => {
  const { store, dir } = await copyOfFixture();
  const { trees, objects } = contentOf(store, dir);
  const s = Store.open(store);
  let r: Awaited<ReturnType<Store['repack']>>;
  try {
    await assert.rejects(s.repack({ planObjects: 0 }), (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT'));
    r = await s.repack({ level: 3, planObjects: 7 });
  } finally {
    s.close();
  }
  // The fixture's rows fit one 8 MiB transaction: more than one means the plan came in windows.
  assert.ok(r.transactions > 1, `${r.transactions} transactions`);
  // Every object moved once, or stayed in a row whose rewrite would have been larger.
  assert.equal(r.objects + r.objectsKept, objects.length);
  const c = Client.connect(store);
  assertIntact(c);
  c.close();
  assertSameContent(store, dir, { trees, objects });
  const s2 = Store.open(store);
  try {
    assert.equal((await s2.repack({ level: 3 })).objects, 0);
  } finally {
    s2.close();
  }
});

test('a repack after new commits rewrites only the rows written since; a higher level rewrites all', { timeout: 120_000 }, async () => {
  const { store, dir } = await copyOfFixture();
  const c = Client.connect(store);
  const r1 = await c.repack({ level: 3 });
  const ws = join(dir, `ws-incremental-${copies++}`);
  await c.createWorkspace('work', { at: ws });
  for (let i = 0; i < 3; i++) {
    writeFileSync(join(ws, `inc-${i}.txt`), seededBytes(300 + i, 3000));
    assert.equal((await c.commitWorkspace(ws)).outcome, 'Created');
  }
  const { trees, objects } = contentOf(store, dir);
  const r2 = await c.repack({ level: 3 });
  assert.equal(r2.rowsSkipped, r1.rowsAfter);
  assert.ok(r2.rowsBefore >= 1 && r2.rowsBefore <= 6, `rows written by the commits: ${r2.rowsBefore}`);
  assert.ok(r2.objects < objects.length / 4);
  // Level 3 rows are not good enough for level 19 (the dictionaries earlier repacks stored are rewritten too).
  const peek = new Database(store, { readonly: true });
  const dictionaries = peek.prepare('SELECT count(*) FROM objects WHERE kind = ?').pluck().get(ObjectKind.Dictionary) as number;
  peek.close();
  const r3 = await c.repack({ level: 19 });
  assert.equal(r3.rowsSkipped, 0);
  assert.equal(r3.objects, objects.length + dictionaries);
  assertIntact(c);
  c.close();
  assertSameContent(store, dir, { trees, objects });
});

test('repack at a fast level, then the Store takes new commits and imports as usual', { timeout: 120_000 }, async () => {
  const { store, dir } = await copyOfFixture();
  const c = Client.connect(store);
  const r = await c.repack({ level: 3 });
  assert.equal(r.level, 3);
  const src = join(dir, 'later');
  mkdirSync(src, { recursive: true });
  for (let i = 0; i < 20; i++) writeFileSync(join(src, `n${i}`), seededBytes(500 + i, 300 + i * 100));
  await c.initLayerStack({ name: 'later', source: src });
  const target = join(dir, `later-export-${copies++}`);
  c.export('later', target);
  assert.deepEqual(walkForCompare(target).map((w) => w.content), walkForCompare(src).map((w) => w.content));
  assertIntact(c);
  c.close();
});

test('a read whose locator went stale (repacked by another connection in between) follows the object', { timeout: 120_000 }, async () => {
  const { store } = await copyOfFixture();
  const objects = readAllObjects(store);
  const s = Store.open(store, { readonly: true });
  const ids = (s.db.prepare('SELECT id FROM objects').pluck().all() as Buffer[]).filter((_, i) => i % 7 === 0);
  const stale = new Map(ids.map((id) => [id.toString('hex'), s.objects.locator(id)]));
  const c = Client.connect(store);
  await c.repack({ level: 3 });
  c.close();
  // The reader's next locator lookup of each object answers what it was before the repack,
  // as if the repack had committed between that lookup and the row read.
  const r = s.objects as unknown as { locate: { get(id: Buffer): unknown } };
  const real = r.locate;
  const served = new Set<string>();
  r.locate = {
    get(id: Buffer) {
      const key = Buffer.from(id).toString('hex');
      if (stale.has(key) && !served.has(key)) {
        served.add(key);
        return stale.get(key);
      }
      return real.get(id);
    },
  };
  s.objects.reset();
  // Each read follows its moved locator to the object itself: get() re-hashes what it returns,
  // and the length is the one recorded before the repack.
  const sizeOf = new Map(objects.map((o) => [o.split(':')[0]!, Number(o.split(':')[2])]));
  for (const id of ids) assert.equal(s.objects.get(id).length, sizeOf.get(Buffer.from(id).toString('hex')));
  assert.equal(served.size, ids.length);
  r.locate = real;
  s.close();
  assert.deepEqual(readAllObjects(store), objects);
});

test('bad input: a read-only Store, a newer format, a bad level: typed errors, the Store unchanged', { timeout: 60_000 }, async () => {
  const { store } = await copyOfFixture();
  const h = sha(store);
  const form = physical(store);
  const ro = Client.connect(store, { readonly: true });
  await assert.rejects(ro.repack(), (e: unknown) => isLayerFsError(e, 'ERR_READ_ONLY'));
  ro.close();
  assert.equal(sha(store), h);
  const rw = Client.connect(store);
  await assert.rejects(rw.repack({ level: 0 }), (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT'));
  await assert.rejects(rw.repack({ level: 2.5 }), (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT'));
  rw.close();
  assert.equal(physical(store), form);

  // A newer format is refused at connect, and by repack itself if the version moved after connect.
  const other = new Database(store);
  other.pragma('user_version = 99');
  assert.throws(() => Client.connect(store), (e: unknown) => isLayerFsError(e, 'ERR_UNSUPPORTED_FORMAT'));
  other.pragma(`user_version = ${FORMAT_VERSION}`);
  const c = Client.connect(store);
  other.pragma(`user_version = ${FORMAT_VERSION + 1}`);
  await assert.rejects(c.repack(), (e: unknown) => isLayerFsError(e, 'ERR_UNSUPPORTED_FORMAT'));
  other.pragma(`user_version = ${FORMAT_VERSION}`);
  other.close();
  c.close();
  assert.equal(physical(store), form);
  assertStoreIntact(store);
});

/** Runs the worker; `onLine` sees each output line and may kill it. Resolves with all output. */
function runWorker(store: string, batch: number, level: number, onLine: (line: string, kill: () => void) => void, pauseMs = 0): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, nodeArgs(worker, store, String(batch), String(level), String(pauseMs)), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let pending = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      pending += d.toString();
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        onLine(line, () => child.kill('SIGKILL'));
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code !== 0 && signal !== 'SIGKILL') reject(new Error(`repack worker exited ${code}: ${err}`));
      else resolve(out);
    });
  });
}

test('SIGKILL mid-repack (seeded points): the Store is intact and every object and tree reads as before', { timeout: 300_000 }, async () => {
  const { store, dir } = await copyOfFixture();
  const { trees, objects } = contentOf(store, dir);
  const db = new Database(store, { readonly: true });
  const chunkDeltas = db.prepare('SELECT count(*) FROM objects WHERE kind = ? AND codec = ?').pluck().get(ObjectKind.Chunk, Codec.Delta) as number;
  db.close();
  assert.ok(chunkDeltas >= 40, `the history holds ${chunkDeltas} chunk deltas`);
  const next = rng(11);
  let killedMidway = 0;
  for (let trial = 0; trial < 5; trial++) {
    // Kill after a seeded number of progress lines, a seeded few ms later: inside a batch's
    // transaction or between two, and once during VACUUM.
    const after = trial === 4 ? -1 : 1 + Math.floor(next() * 6);
    const delay = Math.floor(next() * 40);
    let lines = 0;
    const out = await runWorker(store, 64 * 1024, trial % 2 ? 19 : 3, (line, kill) => {
      if (!line.startsWith('progress')) return;
      lines++;
      if (after < 0 ? line.startsWith('progress vacuum') : lines === after) setTimeout(kill, delay);
    });
    if (!out.includes('done')) killedMidway++;
    assertStoreIntact(store);
    assert.deepEqual(readAllObjects(store), objects);
  }
  assert.ok(killedMidway >= 3, `killed mid-repack in ${killedMidway} of 5 trials`);
  assert.deepEqual(exportStates(store, dir), trees);
  // A repack after the crashes finishes the job (resuming: rows already rewritten are kept).
  const c = Client.connect(store);
  await c.repack({ level: 3 });
  const again = await c.repack({ level: 3 });
  assert.equal(again.objects, 0);
  assertIntact(c);
  c.close();
  assertSameContent(store, dir, { trees, objects });
});

test('a writer on another connection during repack loses nothing', { timeout: 300_000 }, async () => {
  const { store, dir } = await copyOfFixture();
  const { trees, objects } = contentOf(store, dir);
  const c = Client.connect(store);
  const ws = join(dir, `ws-concurrent-${copies++}`);
  await c.createWorkspace('work', { at: ws });
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  let finished = false;
  const repack = runWorker(
    store,
    32 * 1024,
    19,
    (line) => {
      if (line.startsWith('progress rewrite 1/')) started();
    },
    150,
  ).then((out) => {
    finished = true;
    return out;
  });
  await running;
  const sources: string[] = [];
  let overlapped = 0;
  for (let i = 0; i < 6; i++) {
    if (!finished) overlapped++;
    const p = join(ws, `new-${i}.txt`);
    writeFileSync(p, seededBytes(900 + i, 2000 + i * 500));
    const res = await c.commitWorkspace(ws);
    assert.equal(res.outcome, 'Created');
    const src = join(dir, `concurrent-src-${copies}-${i}`);
    mkdirSync(src, { recursive: true });
    writeFileSync(join(src, 'a.bin'), seededBytes(700 + i, 5000));
    await c.initLayerStack({ name: `during-${i}`, source: src });
    sources.push(src);
  }
  // Readers outside a read transaction too (cat): an object may move between its locator and
  // its row; the reader follows it.
  const files = listSource(join(dir, 'src'));
  let readRounds = 0;
  do {
    for (const f of files) {
      assert.deepEqual(c.cat('main', f), readFileSync(join(dir, 'src', f)), f);
      await new Promise((r) => setImmediate(r));
    }
    if (!finished) readRounds++;
  } while (!finished);
  const out = await repack;
  assert.ok(out.includes('done'), out);
  assert.ok(overlapped >= 1, 'at least one write ran while the repack did');
  assert.ok(readRounds + overlapped >= 2, 'reads ran while the repack did');
  assertIntact(c);
  for (let i = 0; i < 6; i++) {
    assert.deepEqual(c.cat('work', `new-${i}.txt`), seededBytes(900 + i, 2000 + i * 500));
    assert.deepEqual(c.cat(`during-${i}`, 'a.bin'), seededBytes(700 + i, 5000));
  }
  c.close();
  const after = exportStates(store, dir);
  for (const [id, tree] of trees) assert.deepEqual(after.get(id), tree);
  const now = new Set(readAllObjects(store));
  for (const o of objects) assert.ok(now.has(o));
});

test('two repacks at once: each skips what the other moved; nothing is lost', { timeout: 300_000 }, async () => {
  const { store, dir } = await copyOfFixture();
  const { trees, objects } = contentOf(store, dir);
  const [a, b] = await Promise.all([runWorker(store, 32 * 1024, 3, () => {}, 20), runWorker(store, 48 * 1024, 3, () => {}, 20)]);
  const results = [a, b].map((o) => o.split('\n').find((l) => l.startsWith('done ')));
  assert.ok(results.every((r) => r !== undefined), `${a}\n${b}`);
  const stats = results.map((r) => JSON.parse(r!.slice(5)) as { objects: number; objectsKept: number; skipped: number });
  // Each object moved (or was kept in a row whose rewrite would have been larger) at least once;
  // what one moved before the other's batch came is skipped there.
  assert.ok(stats[0]!.objects + stats[1]!.objects + stats[0]!.objectsKept + stats[1]!.objectsKept >= objects.length, JSON.stringify(stats));
  assertStoreIntact(store);
  assertSameContent(store, dir, { trees, objects });
});

test('a format-1 Store with 64 KiB pages, written raw: upgraded on connect, then repacked; content unchanged', { timeout: 120_000 }, async () => {
  const { dir } = await fixture();
  const store = join(dir, `format1-${copies++}.layerfs`);
  process.env.LAYERFS_COMPRESS = '0';
  try {
    const c = Client.create(store);
    await c.initLayerStack({ name: 'main', source: join(dir, 'src') });
    c.close();
  } finally {
    delete process.env.LAYERFS_COMPRESS;
  }
  const db = new Database(store);
  db.pragma('journal_mode = DELETE');
  db.pragma('page_size = 65536');
  db.exec('VACUUM');
  asFormat(db, 1);
  db.close();
  const trees = exportStates(store, dir);
  const c = Client.connect(store);
  const r = await c.repack();
  assert.ok(r.fileBytesAfter < r.fileBytesBefore * 0.8, `${r.fileBytesAfter} vs ${r.fileBytesBefore}`);
  assert.equal(c.info().formatVersion, FORMAT_VERSION);
  assertIntact(c);
  c.close();
  const check = new Database(store, { readonly: true });
  assert.equal(check.pragma('page_size', { simple: true }), 65536);
  check.close();
  assert.deepEqual(exportStates(store, dir), trees);
  readAllObjects(store);
});
