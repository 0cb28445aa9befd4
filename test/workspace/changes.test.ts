import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { objectId, setXattr, walkTreeSync, walkRelPath } from '../../lib/native/index.js';
import { decodeSegments, encodeSegment, forgetRecentCaches, loadCache, segmentEnds, SEGMENT_MAX, SEGMENT_TAG, type StatCache } from '../../lib/workspace/cache.js';
import { diffWalk } from '../../lib/workspace/changes.js';
import { listWorkspaces } from '../../lib/workspace/index.js';
import { tempDir } from '../helpers/tmp.js';
import { walkForCompare } from '../helpers/treewalk.js';
import { assertIntact } from '../helpers/integrity.js';
import { Rng } from '../helpers/random.js';

async function workspaceOf(files: Record<string, string>) {
  const dir = tempDir();
  const src = join(dir, 'src');
  fs.mkdirSync(src);
  for (const [rel, body] of Object.entries(files)) {
    fs.mkdirSync(join(src, rel, '..'), { recursive: true });
    fs.writeFileSync(join(src, rel), body);
  }
  const storePath = join(dir, 'store.sqlite');
  const client = Client.create(storePath);
  const init = await client.initLayerStack({ name: 'p', source: src });
  client.forkBranch({ name: 'b', layer: init.layer.id });
  const ws = await client.createWorkspace('b', { at: join(dir, 'ws') });
  return { dir, client, ws, at: ws.path, storePath };
}

const serialOf = (client: Client, path: string) => client.stat('b', path).serial;

async function commit(client: Client, id: string) {
  const r = await client.commitWorkspace(id);
  assert.equal(r.outcome, 'Created');
  assert.equal((await client.workspaceStatus(id)).clean, true);
  return r;
}

test('serials: mv keeps one, ln shares one, an editor save keeps the path, new inodes never reuse a deleted serial', async () => {
  const { client, ws, at } = await workspaceOf({ 'a.txt': 'a', 'b.txt': 'b', 'dir/c.txt': 'c' });
  try {
    const a = serialOf(client, 'a.txt');
    const c = serialOf(client, 'dir/c.txt');
    const highest = Math.max(a, serialOf(client, 'b.txt'), c, serialOf(client, 'dir'));
    fs.renameSync(join(at, 'a.txt'), join(at, 'moved.txt'));
    fs.linkSync(join(at, 'dir/c.txt'), join(at, 'c-link'));
    fs.writeFileSync(join(at, 'b.tmp'), 'saved');
    fs.renameSync(join(at, 'b.tmp'), join(at, 'b.txt'));
    const st = await client.workspaceStatus(ws.id);
    const byPath = Object.fromEntries(st.changes.map((x) => [x.path, x]));
    assert.equal(byPath['moved.txt']?.change, 'renamed');
    assert.equal(byPath['moved.txt']?.oldPath, 'a.txt');
    assert.equal(byPath['b.txt']?.change, 'modified');
    await commit(client, ws.id);
    assert.equal(serialOf(client, 'moved.txt'), a);
    assert.equal(serialOf(client, 'c-link'), c);
    assert.equal(client.stat('b', 'c-link').nlink, 2);
    assert.equal(client.cat('b', 'b.txt').toString(), 'saved');

    // Delete the highest serial, then add a file: it gets a fresh serial, not the deleted one.
    fs.writeFileSync(join(at, 'newest'), 'n');
    await commit(client, ws.id);
    const newest = serialOf(client, 'newest');
    assert.ok(newest > highest);
    fs.unlinkSync(join(at, 'newest'));
    await commit(client, ws.id);
    fs.writeFileSync(join(at, 'after'), 'x');
    await commit(client, ws.id);
    assert.ok(serialOf(client, 'after') > newest, 'the deleted serial is not reused');
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('sockets are skipped; renaming a directory renames every path below it', async () => {
  const { client, ws, at } = await workspaceOf({ 'lib/x': 'x', 'lib/sub/y': 'y', keep: 'k' });
  const server = net.createServer();
  try {
    await new Promise<void>((resolve) => server.listen(join(at, 'lib/sock'), resolve));
    const lib = serialOf(client, 'lib');
    fs.renameSync(join(at, 'lib'), join(at, 'src'));
    const st = await client.workspaceStatus(ws.id);
    assert.deepEqual(st.skipped, [join(at, 'src/sock')]);
    const byPath = Object.fromEntries(st.changes.map((x) => [x.path, x]));
    assert.equal(byPath['src']?.change, 'renamed');
    assert.equal(byPath['src']?.oldPath, 'lib');
    assert.equal(byPath['lib'], undefined, 'a rename source is not also deleted');
    await commit(client, ws.id);
    assert.equal(serialOf(client, 'src'), lib);
    assert.equal(client.cat('b', 'src/sub/y').toString(), 'y');
    assert.throws(() => client.stat('b', 'src/sock'), { code: 'ERR_NOT_FOUND' });
    assertIntact(client);
  } finally {
    server.close();
    client.close();
  }
});

test('a directory: its xattrs count when its mtime moves too, its mtime alone does not', async () => {
  const { client, ws, at } = await workspaceOf({ 'd/x': 'x', 'e/y': 'y' });
  try {
    setXattr(join(at, 'd'), 'user.k', 'v2');
    fs.writeFileSync(join(at, 'd/new'), 'n'); // moves d's mtime in the same edit
    fs.writeFileSync(join(at, 'e/new'), 'n'); // e: entries only
    const paths = (await client.workspaceStatus(ws.id)).changes.map((c) => `${c.change} ${c.path}`).sort();
    assert.deepEqual(paths, ['added d/new', 'added e/new', 'modified d']);
    await commit(client, ws.id);
    setXattr(join(at, 'e'), 'user.k', 'same');
    await commit(client, ws.id);
    setXattr(join(at, 'e'), 'user.k', 'same'); // ctime moves, nothing a diff counts
    assert.deepEqual((await client.workspaceStatus(ws.id)).changes, []);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('random edits over many commits: every Commit equals the directory, and status is clean after it', async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 60; i++) files[`d${i % 4}/s${i % 3}/f${i}`] = `file ${i}\n`;
  const { dir, client, ws, at } = await workspaceOf(files);
  const r = new Rng(12345);
  const rnd = (n: number) => r.below(n);
  const list = () => {
    const w = walkTreeSync(at);
    const all = Array.from({ length: w.count }, (_, i) => ({ rel: walkRelPath(w, i).toString(), dir: w.kind[i] === 2 }));
    return { files: all.filter((e) => !e.dir).map((e) => e.rel), dirs: all.filter((e) => e.dir).map((e) => e.rel) };
  };
  try {
    for (let round = 0; round < 12; round++) {
      for (let k = 0; k < 5; k++) {
        const { files: fs_, dirs } = list();
        const f = fs_.length > 0 ? join(at, fs_[rnd(fs_.length)]!) : undefined;
        const d = join(at, dirs[rnd(dirs.length)]!);
        const fresh = join(d, `n${round}-${k}`);
        try {
          switch (rnd(9)) {
            case 0:
              fs.writeFileSync(fresh, `new ${round} ${k}`);
              break;
            case 1:
              if (f) fs.appendFileSync(f, 'more');
              break;
            case 2:
              if (f) {
                fs.writeFileSync(f + '.tmp', `replaced ${round}`);
                fs.renameSync(f + '.tmp', f);
              }
              break;
            case 3:
              if (f) fs.renameSync(f, fresh);
              break;
            case 4:
              if (f) fs.linkSync(f, fresh);
              break;
            case 5:
              if (f) fs.unlinkSync(f);
              break;
            case 6:
              fs.mkdirSync(fresh);
              fs.writeFileSync(join(fresh, 'inside'), 'i');
              break;
            case 7:
              if (f) fs.chmodSync(f, 0o600);
              break;
            default:
              fs.symlinkSync('target', fresh);
          }
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        }
      }
      const r = await client.commitWorkspace(ws.id);
      assert.notEqual(r.outcome, 'HeadMoved');
      assert.equal((await client.workspaceStatus(ws.id)).clean, true, `clean after commit ${round}`);
      const out = join(dir, `export-${round}`);
      client.export('b', out);
      assert.deepEqual(walkForCompare(out).slice(1), walkForCompare(at).slice(1), `round ${round}`);
      fs.rmSync(out, { recursive: true });
    }
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('the stat cache: segments round-trip (either byte order), a commit rewrites only touched segments, damage is ERR_CORRUPT', async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 3000; i++) files[`d${Math.floor(i / 100)}/f${i}`] = String(i);
  const { client, ws, at, storePath } = await workspaceOf(files);
  const store = Store.open(storePath);
  try {
    const id = listWorkspaces(store)[0]!.id;
    const cache = loadCache(store, id);
    assert.equal(cache.count, 3000 + 30 + 1);
    const ends = segmentEnds(cache);
    assert.ok(ends.length > 1 && ends.every((e, i) => e - (ends[i - 1] ?? 0) <= SEGMENT_MAX));
    // Round trip through segments, natively and byte-swapped.
    const children = new Uint32Array(cache.count);
    for (let i = 1; i < cache.count; i++) children[cache.parent[i]!]!++;
    for (const swap of [false, true]) {
      let s = 0;
      const segs = ends.map((e) => {
        const seg = encodeSegment(cache, children, s, e, swap);
        s = e;
        return seg;
      });
      const back: StatCache = decodeSegments(cache.count, cache.maxSerial, segs, swap);
      for (const k of ['nameOffsets', 'parent', 'kind', 'mode', 'ino', 'size', 'mtimeNs', 'ctimeNs', 'serial'] as const) assert.deepEqual(back[k], cache[k], k);
      assert.ok(back.names.equals(cache.names));
    }
    // The cache matches a fresh walk exactly: a diff against it is clean.
    assert.equal(diffWalk(at, walkTreeSync(at), cache).clean, true);

    const idsBefore = new Set((store.db.prepare('SELECT id FROM workspace_entries WHERE workspace_id = ?').pluck().all(id) as Buffer[]).map((b) => b.toString('hex')));
    fs.appendFileSync(join(at, 'd7/f742'), 'edit');
    await commit(client, ws.id);
    const idsAfter = (store.db.prepare('SELECT id FROM workspace_entries WHERE workspace_id = ?').pluck().all(id) as Buffer[]).map((b) => b.toString('hex'));
    const fresh = idsAfter.filter((h) => !idsBefore.has(h));
    assert.ok(fresh.length >= 1 && fresh.length <= 2, `${fresh.length} of ${idsAfter.length} segments rewritten`);
    assert.equal(idsAfter.length, idsBefore.size);
    // Reused segments are exactly what encoding the new cache gives.
    const now = loadCache(store, id);
    const kids = new Uint32Array(now.count);
    for (let i = 1; i < now.count; i++) kids[now.parent[i]!]!++;
    let at0 = 0;
    const expected = segmentEnds(now).map((e) => {
      const seg = encodeSegment(now, kids, at0, e);
      at0 = e;
      return objectId(SEGMENT_TAG, seg).subarray(0, 16).toString('hex');
    });
    assert.deepEqual(now.stored!.ids.map((b) => b.toString('hex')), expected);

    // A damaged segment is refused, never silently used.
    const victim = Buffer.from(fresh[0]!, 'hex');
    const data = store.db.prepare('SELECT data FROM workspace_entries WHERE workspace_id = ? AND id = ?').pluck().get(id, victim) as Buffer;
    data[data.length - 1]! ^= 1;
    store.db.prepare('UPDATE workspace_entries SET data = ? WHERE workspace_id = ? AND id = ?').run(data, id, victim);
    // This process holds the cache it saved (the stored list still names it); a new process
    // loads it from the segments.
    forgetRecentCaches();
    await assert.rejects(async () => client.workspaceStatus(ws.id), { code: 'ERR_CORRUPT' });
    await assert.rejects(client.commitWorkspace(ws.id), { code: 'ERR_CORRUPT' });
    assert.equal((await client.endWorkspace(ws.id, { discard: true })).outcome, 'Ended');
    assert.equal(store.db.prepare('SELECT count(*) FROM workspace_entries').pluck().get(), 0);
    assert.equal(store.db.prepare('SELECT count(*) FROM workspace_caches').pluck().get(), 0);
  } finally {
    store.close();
    client.close();
  }
});
