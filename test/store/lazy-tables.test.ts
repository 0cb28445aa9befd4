// Format 11: the tables most Stores never use (LAZY_TABLES) exist only once their owner writes a
// first row. A Store without them reads, verifies, collects garbage, repacks and upgrades as one
// with them; an upgraded format-10 Store keeps the (empty) tables it has.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { FORMAT_VERSION, LAZY_TABLES, Store, type LazyTable } from '../../lib/store/index.js';
import { asFormat } from '../helpers/formats.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

const LAZY = Object.keys(LAZY_TABLES) as LazyTable[];
/** The tables format 10 had (every one of LAZY but format 12's). */
const FORMAT10 = LAZY.filter((t) => t !== 'dictionaries');

function source(dir: string): string {
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  for (let i = 0; i < 30; i++) writeFileSync(join(src, 'd', `t${i}.txt`), `line ${i}\n`.repeat(40 + i));
  writeFileSync(join(src, 'big.bin'), seededBytes(3, 200_000));
  return src;
}

/** The LAZY_TABLES the Store file has, and the tables and indexes that are empty (dbstat). */
function lazyTables(path: string): { tables: string[]; empty: string[] } {
  const db = new Database(path, { readonly: true });
  try {
    const tables = (db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[]).filter((t) => (LAZY as string[]).includes(t)).sort();
    const empty = db.prepare('SELECT name FROM dbstat GROUP BY name HAVING sum(ncell) = 0 ORDER BY name').pluck().all() as string[];
    return { tables, empty };
  } finally {
    db.close();
  }
}

async function history(c: Client, dir: string, branch: string, rounds: number): Promise<string[]> {
  const ws = join(dir, `ws-${branch}`);
  await c.createWorkspace(branch, { at: ws });
  const ids: string[] = [];
  for (let r = 0; r < rounds; r++) {
    const p = join(ws, 'd', 't1.txt');
    writeFileSync(p, readFileSync(p, 'utf8') + `edit ${branch} ${r}\n`);
    writeFileSync(join(ws, `n-${branch}-${r}.bin`), seededBytes(100 + r, 20_000));
    const res = await c.commitWorkspace(ws);
    assert.equal(res.outcome, 'Created');
    if (res.outcome === 'Created') ids.push(res.commit.id);
  }
  assert.equal((await c.endWorkspace(ws)).outcome, 'Ended');
  return ids;
}

/** A Store with Branch `a` of two Commits, turned back into format `format`. */
async function olderStore(format: number): Promise<{ path: string; ids: string[] }> {
  const dir = tempDir('layerfs-lazy-');
  const path = join(dir, 's.layerfs');
  const c = Client.create(path);
  const init = await c.initLayerStack({ name: 'demo', source: source(dir) });
  c.forkBranch({ name: 'a', layer: init.layer.id });
  const ids = await history(c, dir, 'a', 2);
  c.close();
  const db = new Database(path);
  asFormat(db, format);
  db.close();
  return { path, ids };
}

test('a new Store makes none of the tables most Stores never use; reads, gc, repack and verify work without them', async () => {
  const dir = tempDir('layerfs-lazy-');
  const path = join(dir, 's.layerfs');
  const c = Client.create(path);
  try {
    assert.equal(c.info().formatVersion, FORMAT_VERSION);
    assert.equal(FORMAT_VERSION, 13);
    const init = await c.initLayerStack({ name: 'demo', source: source(dir) });
    c.forkBranch({ name: 'b', layer: init.layer.id });
    await history(c, dir, 'b', 3);
    assert.deepEqual(lazyTables(path).tables, []);
    // Every reader of a missing table answers as if it were empty.
    assert.deepEqual(c.pins(), []);
    assert.deepEqual(c.deleted(), []);
    assert.deepEqual(c.checkpoints('b'), []);
    assert.deepEqual(c.remotes(), []);
    assert.deepEqual(c.remoteRefs(), []);
    assert.deepEqual(c.sandboxStatus(), []);
    assert.equal(c.retention().branchCommits, null);
    assert.equal(c.log('b').length, 3);
    assert.throws(() => c.cat('origin/b', 'd/t1.txt'), { code: 'ERR_NOT_FOUND' });
    assert.throws(() => c.branch('gone'), { code: 'ERR_NOT_FOUND' });
    // Clearing a policy that was never set, gc with nothing to prune, and a repack make nothing.
    c.setRetention({ branchCommits: null, olderThanMs: null });
    assert.equal((await c.gc({ dryRun: true })).outcome, 'DryRun');
    await c.gc();
    await c.repack();
    assertIntact(c);
    // Empty pages left: the Workspace tables' alone (every Workspace has ended).
    assert.deepEqual(lazyTables(path), {
      tables: [],
      empty: ['sqlite_autoindex_workspace_caches_1', 'sqlite_autoindex_workspace_entries_1', 'sqlite_autoindex_workspaces_1', 'sqlite_autoindex_workspaces_2', 'workspace_caches', 'workspace_entries', 'workspaces'],
    });
  } finally {
    c.close();
  }
  assertStoreIntact(path);
});

test('each owner makes its table with its first row: pins, checkpoints, retention, fork bases, tombstones, pruned Commits, remotes', async () => {
  const dir = tempDir('layerfs-lazy-');
  const path = join(dir, 's.layerfs');
  const c = Client.create(path);
  try {
    const init = await c.initLayerStack({ name: 'demo', source: source(dir) });
    c.forkBranch({ name: 'a', layer: init.layer.id });
    const ids = await history(c, dir, 'a', 4);
    c.pin(`a`);
    assert.deepEqual(lazyTables(path).tables, ['pins']);
    c.checkpoint('a', 'cp');
    c.forkBranch({ name: 'f', branch: 'a', commit: ids[1]! });
    assert.deepEqual(lazyTables(path).tables, ['checkpoints', 'fork_bases', 'pins']);
    c.setRetention({ branchCommits: 1, olderThanMs: null });
    await c.deleteBranch('f');
    await c.gc();
    assert.deepEqual(lazyTables(path).tables, ['checkpoints', 'fork_bases', 'pins', 'pruned_commits', 'retention', 'tombstones']);
    assert.equal(c.deleted().length, 1);
    assert.equal(c.pins().length, 1);
    assert.equal(c.checkpoints('a').length, 1);
    c.remoteAdd('origin', 'postgres://localhost/none');
    assert.equal(c.remotes().length, 1);
    assert.ok(lazyTables(path).tables.includes('remotes'));
    c.remoteRemove('origin');
    assertIntact(c);
  } finally {
    c.close();
  }
  assertStoreIntact(path);
});

test('a write that makes a table and then fails leaves no table; another handle sees a table made after its first look', async () => {
  const dir = tempDir('layerfs-lazy-');
  const path = join(dir, 's.layerfs');
  const c = Client.create(path);
  await c.initLayerStack({ name: 'demo', source: source(dir) });
  c.close();
  const s = Store.open(path);
  const ro = Client.connect(path, { readonly: true });
  try {
    assert.throws(() =>
      s.writeSync(() => {
        s.createTable('pins');
        assert.equal(s.hasTable('pins'), true);
        throw new Error('stop');
      }),
    );
    assert.equal(s.hasTable('pins'), false);
    assert.deepEqual(ro.pins(), []);
    const w = Client.connect(path);
    try {
      w.pin('demo');
    } finally {
      w.close();
    }
    assert.equal(s.hasTable('pins'), true);
    assert.equal(ro.pins().length, 1);
  } finally {
    ro.close();
    s.close();
  }
  assertStoreIntact(path);
});

test('a format-10 Store is upgraded to the current format and keeps its tables; read-only it reads as format 10', async () => {
  const { path, ids } = await olderStore(10);
  // Format 10 had every table, empty or not.
  assert.deepEqual(lazyTables(path).tables, [...FORMAT10].sort());
  const ro = Client.connect(path, { readonly: true });
  try {
    assert.equal(ro.info().formatVersion, 10);
    assert.deepEqual(ro.pins(), []);
    assertIntact(ro);
  } finally {
    ro.close();
  }
  const c2 = Client.connect(path);
  try {
    assert.equal(c2.info().formatVersion, FORMAT_VERSION);
    assert.deepEqual(lazyTables(path).tables, [...FORMAT10].sort());
    c2.pin('a');
    c2.forkBranch({ name: 'f', branch: 'a', commit: ids[0]! });
    await c2.deleteBranch('f');
    await c2.gc();
    await c2.repack();
    assert.equal(c2.pins().length, 1);
    assert.equal(c2.deleted().length, 1);
    assertIntact(c2);
  } finally {
    c2.close();
  }
  assertStoreIntact(path);
});

test('a format-4 Store is upgraded to the current format without the tables of formats 5-9, and they are made on first use', async () => {
  const { path } = await olderStore(4);
  assert.deepEqual(lazyTables(path).tables, []);
  // Read-only, a format-4 Store is read as is: no table of a later format, every read empty.
  const ro = Client.connect(path, { readonly: true });
  try {
    assert.equal(ro.info().formatVersion, 4);
    assert.deepEqual([ro.pins(), ro.deleted(), ro.checkpoints('a'), ro.remotes()], [[], [], [], []]);
    assertIntact(ro);
  } finally {
    ro.close();
  }
  const c2 = Client.connect(path);
  try {
    assert.equal(c2.info().formatVersion, FORMAT_VERSION);
    assert.deepEqual(lazyTables(path).tables, []);
    assert.equal(c2.log('a').length, 2);
    c2.checkpoint('a', 'cp');
    assert.deepEqual(lazyTables(path).tables, ['checkpoints']);
    assertIntact(c2);
  } finally {
    c2.close();
  }
  assertStoreIntact(path);
});
