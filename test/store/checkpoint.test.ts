import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { importTree, Store } from '../../lib/store/index.js';
import { Checkpointer, WAL_BYTES_LIMIT } from '../../lib/store/checkpointer.js';
import { WAL_SIZE_LIMIT } from '../../lib/store/store-file.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { loaderFlags } from '../../lib/workspace/node-child.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

function bigTree(dir: string): { src: string; bytes: Buffer } {
  const src = join(dir, 'src');
  mkdirSync(src);
  const bytes = seededBytes(3, 40 * 1024 * 1024);
  writeFileSync(join(src, 'big'), bytes);
  writeFileSync(join(src, 'small'), 'small');
  return { src, bytes };
}

const walBytes = (path: string): number => (existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0);

test('a large commit returns before its checkpoint; other connections see it; close leaves no WAL', async () => {
  const dir = tempDir();
  const { src, bytes } = bigTree(dir);
  const path = join(dir, 's.db');
  const store = Store.create(path);
  const rootId = await store.write(async (w) => (await importTree(src, w, store.pages, { forbidden: store.files })).rootId);
  // The frames are committed in the WAL; copying them into the database is left to the background.
  assert.ok(walBytes(path) > bytes.length, `WAL of ${walBytes(path)} bytes`);
  const other = Store.open(path);
  try {
    const view = other.view(rootId);
    assert.ok(view.readFile(view.resolve([Buffer.from('big')], 'big').inode).equals(bytes));
  } finally {
    other.close();
  }
  // Small commits afterwards keep working while (or after) the checkpoint runs.
  await store.write((w) => w.put(2, Buffer.alloc(32, 1), Buffer.from('x')));
  store.close();
  assert.equal(existsSync(`${path}-wal`), false, 'the last close checkpoints and removes the WAL');
  const again = Store.open(path);
  try {
    assert.equal(again.db.pragma('quick_check', { simple: true }), 'ok');
    const view = again.view(rootId);
    assert.ok(view.readFile(view.resolve([Buffer.from('big')], 'big').inode).equals(bytes));
  } finally {
    again.close();
  }
});

test('a process that exits without closing after a large commit loses nothing', () => {
  const dir = tempDir();
  const { src, bytes } = bigTree(dir);
  const path = join(dir, 's.db');
  const code =
    `import { importTree, Store } from './lib/store/index.ts';` +
    `const s = Store.create(${JSON.stringify(path)});` +
    `const id = await s.write(async (w) => (await importTree(${JSON.stringify(src)}, w, s.pages, { forbidden: s.files })).rootId);` +
    `console.log(id.toString('hex'));`;
  const r = spawnSync(process.execPath, [...loaderFlags(), '--input-type=module', '-e', code], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  const rootId = Buffer.from(r.stdout.trim(), 'hex');
  const store = Store.open(path);
  try {
    assert.equal(store.db.pragma('quick_check', { simple: true }), 'ok');
    const view = store.view(rootId);
    assert.ok(view.readFile(view.resolve([Buffer.from('big')], 'big').inode).equals(bytes));
  } finally {
    store.close();
  }
});

/** WAL frames and frames already copied into the database, from the wal-index header (docs: sqlite.org/walformat.html). */
function walFrames(path: string): { max: number; backfilled: number } {
  const b = readFileSync(`${path}-shm`).subarray(0, 100);
  return { max: b.readUInt32LE(16), backfilled: b.readUInt32LE(96) };
}

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > ms) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a handle that checkpoints in the background never checkpoints inside COMMIT; its worker copies past the frame limit and when quiet, and truncates a large WAL', { skip: endianness() !== 'LE' }, async () => {
  const dir = tempDir();
  const path = join(dir, 's.db');
  const store = Store.create(path);
  let n = 0;
  try {
    store.checkpointInBackground({ framesLimit: 40, pollMs: 20, idlePolls: 3, walBytesLimit: 1024 * 1024 });
    assert.equal(store.db.pragma('wal_autocheckpoint', { simple: true }), 0);
    // Small commits: the worker copies once 40 frames are waiting (it checks every 20 ms).
    const commit = (bytes: number) => store.writeSync((w) => w.put(2, Buffer.from(String(n).padStart(32, '0')), seededBytes(n++, bytes)));
    for (let i = 0; i < 30; i++) commit(3000);
    await until('a checkpoint past the frame limit, or when quiet', () => walFrames(path).backfilled > 0);
    // Quiet: everything is copied without another commit.
    await until('the quiet checkpoint', () => walFrames(path).max === walFrames(path).backfilled);
    // A commit larger than the WAL limit leaves a large WAL file: it is truncated once copied.
    commit(3 * 1024 * 1024);
    assert.ok(walBytes(path) > 1024 * 1024);
    await until('the WAL truncated', () => walBytes(path) <= 1024 * 1024);
    // Another connection sees every commit, and nothing is lost.
    const other = Store.open(path);
    try {
      assert.equal(other.counts().objects, n);
    } finally {
      other.close();
    }
  } finally {
    store.close();
  }
  assertClosedCleanly(path, n);
});

test('a background checkpointer that cannot open its Store says so (its handle then checkpoints for itself)', async () => {
  const dir = tempDir();
  const c = new Checkpointer(join(dir, 'missing.db'), { pollMs: 10 });
  try {
    assert.equal(c.alive, true);
    c.committed();
    await until('the worker gone', () => !c.alive);
  } finally {
    c.close();
  }
  assert.equal(c.alive, true, 'a closed checkpointer is not a failed one');
});

test('handles attached to one checkpointer (the mount daemon shares one across its mounts): commits of each are copied; closing a handle leaves the worker; once its owner closes it, a handle checkpoints for itself', { skip: endianness() !== 'LE' }, async () => {
  const dir = tempDir();
  const path = join(dir, 's.db');
  Store.create(path).close();
  const owner = new Checkpointer(path, { framesLimit: 40, pollMs: 20, idlePolls: 3, walBytesLimit: 1024 * 1024 });
  owner.start();
  const a = Store.open(path);
  const b = Store.open(path);
  let n = 0;
  const commit = (s: Store, bytes: number) => s.writeSync((w) => w.put(2, Buffer.from(String(n).padStart(32, '0')), seededBytes(n++, bytes)));
  try {
    for (const s of [a, b]) {
      s.checkpointInBackground(undefined, owner.control);
      assert.equal(s.db.pragma('wal_autocheckpoint', { simple: true }), 0);
    }
    for (let i = 0; i < 15; i++) {
      commit(a, 3000);
      commit(b, 3000);
    }
    await until('a checkpoint of both handles\' commits', () => walFrames(path).backfilled > 0);
    await until('the quiet checkpoint', () => walFrames(path).max === walFrames(path).backfilled);
    // A handle's close leaves the shared worker running for the others.
    a.close();
    assert.equal(owner.alive, true);
    const copied = walFrames(path).backfilled;
    for (let i = 0; i < 30; i++) commit(b, 3000);
    await until('the worker copies the other handle\'s commits', () => walFrames(path).backfilled > copied || walFrames(path).max < copied);
    // The owner closes it: the handle's next commit turns its automatic checkpoint back on.
    owner.close();
    commit(b, 3000);
    assert.notEqual(b.db.pragma('wal_autocheckpoint', { simple: true }), 0);
    assert.equal(b.counts().objects, n);
  } finally {
    a.close();
    b.close();
    owner.close();
  }
  assertClosedCleanly(path, n);
});

/** After the last handle closed: the WAL is gone, and the Store is whole with its `n` objects. */
function assertClosedCleanly(path: string, n: number): void {
  assert.equal(existsSync(`${path}-wal`), false, 'the last close checkpoints and removes the WAL');
  const again = Store.open(path);
  try {
    assert.equal(again.db.pragma('quick_check', { simple: true }), 'ok');
    assert.equal(again.counts().objects, n);
  } finally {
    again.close();
  }
}

test('a WAL grown past its limit is cut back to it when the log starts over (a reader kept it growing meanwhile)', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const path = join(dir, 's.db');
  const store = Store.create(path);
  const reader = Store.open(path);
  try {
    // A reader inside a snapshot keeps the log from starting over, so every commit appends to
    // the WAL: it grows past the limit, as with several agents committing to one Store.
    reader.db.exec('BEGIN');
    reader.db.prepare('SELECT count(*) FROM objects').get();
    for (let i = 0; i < 6; i++) {
      writeFileSync(join(src, `f${i}`), seededBytes(10 + i, 4 * 1024 * 1024));
      await store.write(async (w) => (await importTree(src, w, store.pages, { forbidden: store.files })).rootId);
    }
    const grown = walBytes(path);
    assert.ok(grown > WAL_SIZE_LIMIT, `the WAL grew to ${grown} bytes`);
    reader.db.exec('COMMIT');
    // The next commit copies the log into the database (the automatic checkpoint); the one after
    // it starts the log over and cuts the file back.
    for (let i = 0; i < 2; i++) {
      writeFileSync(join(src, 'small'), `small ${i}`);
      await store.write(async (w) => (await importTree(src, w, store.pages, { forbidden: store.files })).rootId);
    }
    const after = walBytes(path);
    assert.ok(after <= WAL_SIZE_LIMIT, `the WAL is ${after} bytes after starting over (limit ${WAL_SIZE_LIMIT})`);
  } finally {
    reader.close();
    store.close();
  }
});

/**
 * Readers on another thread that always overlap (the next takes its snapshot before the last
 * ends), as several agents' reads do: the log never finds itself without one. Returns stop().
 */
function overlappingReaders(path: string): () => Promise<void> {
  const ctl = new Int32Array(new SharedArrayBuffer(8));
  const code = `
    const { workerData } = require('node:worker_threads');
    const Database = require(workerData.sqlite);
    const ctl = new Int32Array(workerData.ctl);
    const conns = [new Database(workerData.path), new Database(workerData.path)];
    let cur = 0;
    conns[cur].exec('BEGIN'); conns[cur].prepare('SELECT count(*) FROM objects').get();
    Atomics.store(ctl, 1, 1); Atomics.notify(ctl, 1);
    while (Atomics.load(ctl, 0) === 0) {
      Atomics.wait(ctl, 0, 0, 2);
      const next = 1 - cur;
      conns[next].exec('BEGIN'); conns[next].prepare('SELECT count(*) FROM objects').get();
      conns[cur].exec('COMMIT');
      cur = next;
    }
    conns[cur].exec('COMMIT');
    for (const c of conns) c.close();`;
  const sqlite = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(code, { eval: true, workerData: { path, sqlite, ctl: ctl.buffer } });
  Atomics.wait(ctl, 1, 0, 10_000);
  return async () => {
    Atomics.store(ctl, 0, 1);
    await new Promise((r) => worker.once('exit', r));
  };
}

test('small commits behind readers that always overlap keep the WAL near its bound (a TRUNCATE checkpoint that waits briefly for them)', async () => {
  const dir = tempDir();
  const path = join(dir, 's.db');
  const store = Store.create(path);
  const stop = overlappingReaders(path);
  const step = 4 * 1024 * 1024;
  let n = 0;
  let peak = 0;
  try {
    // 40 commits of 4 MiB: 160 MiB through the log, each small enough for the automatic checkpoint.
    for (let i = 0; i < 40; i++) {
      store.writeSync((w) => w.put(2, Buffer.from(String(n).padStart(32, '0')), seededBytes(n++, step)));
      peak = Math.max(peak, walBytes(path));
    }
  } finally {
    await stop();
  }
  try {
    assert.ok(peak <= WAL_BYTES_LIMIT + 4 * step, `the WAL peaked at ${peak} bytes (bound ${WAL_BYTES_LIMIT})`);
    assert.ok(store.walBound.counts.truncated >= 1, `truncated ${store.walBound.counts.truncated} times, kept from it ${store.walBound.counts.busy}`);
    assert.equal(store.counts().objects, n);
  } finally {
    store.close();
  }
  assertClosedCleanly(path, n);
});
