/**
 * A clone of a whole remote into an empty Store streams the remote's packs without negotiating
 * (lib/remote/fetch-all.ts), against a real PostgreSQL 15 cluster: the states come back equal,
 * objects stored out of push order (a child or a delta base in a later pack row, as concurrent
 * pushes can leave them) still land, and a remote missing an object or sending a damaged one
 * is refused with nothing reachable. Also the streaming binary COPY reader against the whole-
 * buffer one, on random chunkings (seed printed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { CopyRowReader, parseBinaryCopy } from '../../lib/remote/copy-binary.js';
import { clusterForFile } from '../helpers/postgres-file.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { rng } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';
import { commitFiles, exported, writeTree } from './fixture.js';

const cluster = clusterForFile('cs');

/** A Store with LayerStack demo and Branch w (a file edited: stored as a delta of its first version), pushed. */
async function pushed(dir: string, url: string): Promise<Client> {
  writeTree(dir);
  const a = Client.create(join(dir, 'a.sqlite'));
  await a.initLayerStack({ name: 'demo', source: join(dir, 'src') });
  a.forkBranch({ name: 'w', layer: 'demo' });
  const v1 = 'line of a file that changes a little\n'.repeat(80);
  await commitFiles(a, 'w', join(dir, 'ws1'), { 'f.txt': v1 });
  await commitFiles(a, 'w', join(dir, 'ws2'), { 'f.txt': v1 + 'one more line\n' });
  a.remoteAdd('origin', url);
  await a.remoteInit();
  await a.push('demo');
  await a.push('w');
  return a;
}

function sameStates(a: Client, b: Client, dir: string): void {
  for (const ref of ['demo', 'w']) assert.deepEqual(exported(b, ref, join(dir, `xb-${ref}`)), exported(a, ref, join(dir, `xa-${ref}`)));
}

test('a clone streams the whole remote without negotiating: same states, verifies', async () => {
  const dir = tempDir();
  const { url } = cluster.freshRemote();
  const a = await pushed(dir, url);
  const { client: b, result } = await Client.clone(url, join(dir, 'b.sqlite'));
  assert.equal(result.transfer.asked, 0);
  // One query: the pack rows stream with their index rows.
  assert.equal(result.transfer.queries, 1);
  assert.equal(result.transfer.objects, b.info().objects);
  sameStates(a, b, dir);
  assert.equal(b.verify().ok, true);
  assertIntact(b);
  // Only a Store that holds nothing streams: a fetch into this one negotiates (and finds nothing new).
  await commitFiles(a, 'w', join(dir, 'ws3'), { 'g.txt': 'new\n' });
  await a.push('w');
  const f = await b.fetch();
  assert.ok(f.transfer.asked > 0);
  assert.equal(b.cat('origin/w', 'g.txt').toString(), 'new\n');
  assertIntact(b);
  a.close();
  b.close();
});

test('objects in a later pack row than what refers to them (children, delta bases) still land', async () => {
  const dir = tempDir();
  const { url, db } = cluster.freshRemote();
  const a = await pushed(dir, url);
  const deltas = Number(cluster.pg.psql('SELECT count(*) FROM layerfs.objects WHERE codec = 2', db).trim());
  assert.ok(deltas > 0, 'the fixture has a delta');
  // Every object of the first pack row (the first leaves pushed), and every delta base, moves
  // to a new last pack row: their parents and deltas now come first in the stream.
  cluster.pg.psql(
    `CREATE TEMP TABLE moved AS SELECT id FROM layerfs.objects WHERE pack = (SELECT min(id) FROM layerfs.packs) OR id IN (SELECT base FROM layerfs.objects WHERE codec = 2);
     INSERT INTO layerfs.packs (data) SELECT string_agg(substring(p.data FROM o."offset" + 1 FOR o.length), ''::bytea ORDER BY o.id) FROM layerfs.objects o JOIN layerfs.packs p ON p.id = o.pack WHERE o.id IN (SELECT id FROM moved);
     UPDATE layerfs.objects o SET pack = (SELECT max(id) FROM layerfs.packs), "offset" = n.off FROM (SELECT o2.id, (coalesce(sum(o2.length) OVER (ORDER BY o2.id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0))::int4 AS off FROM layerfs.objects o2 WHERE o2.id IN (SELECT id FROM moved)) n WHERE o.id = n.id;`,
    db,
  );
  assert.equal((await a.remoteVerify()).ok, true);
  const { client: b, result } = await Client.clone(url, join(dir, 'b.sqlite'), { batchBytes: 4096 });
  assert.equal(result.transfer.asked, 0);
  sameStates(a, b, dir);
  assertIntact(b);
  a.close();
  b.close();
});

test('a remote missing an object that a tree refers to is refused; nothing becomes reachable', async () => {
  const dir = tempDir();
  const { url, db } = cluster.freshRemote();
  const a = await pushed(dir, url);
  cluster.pg.psql(`DELETE FROM layerfs.objects WHERE id = (SELECT id FROM layerfs.objects WHERE kind = (SELECT kind FROM layerfs.objects GROUP BY kind ORDER BY count(*) DESC LIMIT 1) ORDER BY id LIMIT 1)`, db);
  const path = join(dir, 'b.sqlite');
  await assert.rejects(Client.clone(url, path), (e: unknown) => isLayerFsError(e, 'ERR_CORRUPT') && /missing|does not hold/.test((e as Error).message));
  const b = Client.connect(path);
  assert.deepEqual(b.layerStacks(), []);
  assert.deepEqual(b.remoteRefs(), []);
  assertIntact(b);
  b.close();
  a.close();
  assertStoreIntact(path);
});

test('an index row pointing outside its pack row is refused as damaged', async () => {
  const dir = tempDir();
  const { url, db } = cluster.freshRemote();
  const a = await pushed(dir, url);
  cluster.pg.psql(`UPDATE layerfs.objects SET "offset" = "offset" + 100000000 WHERE id = (SELECT id FROM layerfs.objects ORDER BY id LIMIT 1)`, db);
  const path = join(dir, 'b.sqlite');
  await assert.rejects(Client.clone(url, path), (e: unknown) => isLayerFsError(e, 'ERR_CORRUPT'));
  const b = Client.connect(path);
  assert.deepEqual(b.layerStacks(), []);
  assertIntact(b);
  b.close();
  a.close();
});

/** A binary COPY stream of `rows` (bytea or NULL fields), as PostgreSQL writes it. */
function copyStream(rows: (Buffer | null)[][]): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)];
  for (const row of rows) {
    const n = Buffer.alloc(2);
    n.writeInt16BE(row.length);
    parts.push(n);
    for (const f of row) {
      const len = Buffer.alloc(4);
      len.writeInt32BE(f ? f.length : -1);
      parts.push(len);
      if (f) parts.push(f);
    }
  }
  parts.push(Buffer.from([0xff, 0xff]));
  return Buffer.concat(parts);
}

test('the streaming COPY reader gives the rows of the whole-buffer parser, however the stream is cut', () => {
  const seed = Number(process.env.LAYERFS_SEED ?? Math.floor(Math.random() * 1e9));
  console.log(`copy reader seed ${seed} (rerun with LAYERFS_SEED=${seed})`);
  const r = rng(seed);
  for (let round = 0; round < 50; round++) {
    const rows = Array.from({ length: Math.floor(r() * 20) }, () => Array.from({ length: 1 + Math.floor(r() * 3) }, () => (r() < 0.1 ? null : Buffer.alloc(Math.floor(r() * (r() < 0.2 ? 200_000 : 50)), round))));
    const data = copyStream(rows);
    const reader = new CopyRowReader('test');
    const got: (Buffer | null)[][] = [];
    for (let at = 0; at < data.length; ) {
      const n = 1 + Math.floor(r() * (r() < 0.5 ? 7 : 70_000));
      got.push(...reader.push(data.subarray(at, at + n)));
      at += n;
    }
    reader.end();
    assert.deepEqual(got, parseBinaryCopy(data, 'test'), `seed ${seed} round ${round}`);
  }
  const cut = new CopyRowReader('test');
  cut.push(copyStream([[Buffer.from('x')]]).subarray(0, 25));
  assert.throws(() => cut.end(), (e: unknown) => isLayerFsError(e, 'ERR_REMOTE'));
});
