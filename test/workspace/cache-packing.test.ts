/**
 * Format 3 stores stat-cache segments zstd-packed (docs/FORMAT.md "Workspace stat cache"):
 * rows round-trip, a plain segment (as formats 1 and 2 stored it) still loads, and a damaged
 * or truncated packed row is ERR_CORRUPT, never a wrong cache.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { forgetRecentCaches, loadCache, packSegment, unpackSegment } from '../../lib/workspace/cache.js';
import { listWorkspaces } from '../../lib/workspace/index.js';
import { LayerFsError } from '../../lib/errors.js';
import { tempDir } from '../helpers/tmp.js';

async function workspace(n: number) {
  const dir = tempDir();
  const src = join(dir, 'src');
  for (let i = 0; i < n; i++) {
    fs.mkdirSync(join(src, `d${i % 7}`), { recursive: true });
    fs.writeFileSync(join(src, `d${i % 7}`, `f${i}.txt`), `file ${i}\n`);
  }
  const storePath = join(dir, 'store.sqlite');
  const client = Client.create(storePath);
  const init = await client.initLayerStack({ name: 'p', source: src });
  client.forkBranch({ name: 'b', layer: init.layer.id });
  const ws = await client.createWorkspace('b', { at: join(dir, 'ws') });
  return { client, ws, storePath };
}

const isCorrupt = (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_CORRUPT';

test('packSegment: compressible segments are packed and unpack exactly; others stay plain', () => {
  const seg = Buffer.alloc(4 + 49 * 300 + 900);
  seg.writeUInt32LE(300, 0);
  for (let i = 4; i < seg.length; i++) seg[i] = i % 5 === 0 ? (i * 7) & 255 : 0;
  const packed = packSegment(seg);
  assert.ok(packed.length < seg.length / 2, `${packed.length} of ${seg.length}`);
  assert.equal(packed.readUInt32LE(0), 0xffffffff);
  assert.ok(unpackSegment(packed).equals(seg));
  // A plain row (formats 1 and 2, or a segment zstd cannot shrink) is returned as it is.
  const tiny = Buffer.from([1, 0, 0, 0, 9]);
  assert.equal(packSegment(tiny), tiny);
  assert.equal(unpackSegment(seg), seg);
  // Damage: a truncated frame, a wrong length, an absurd length.
  assert.throws(() => unpackSegment(packed.subarray(0, packed.length - 3)), isCorrupt);
  const wrongLength = Buffer.from(packed);
  wrongLength.writeUInt32LE(seg.length + 1, 4);
  assert.throws(() => unpackSegment(wrongLength), isCorrupt);
  const huge = Buffer.from(packed);
  huge.writeUInt32LE(0x7fffffff, 4);
  assert.throws(() => unpackSegment(huge), isCorrupt);
});

test('a Workspace stores its stat cache packed; plain rows of older Stores load; a damaged packed row is ERR_CORRUPT', async () => {
  const { client, ws, storePath } = await workspace(1500);
  const store = Store.open(storePath);
  try {
    const id = listWorkspaces(store)[0]!.id;
    const rows = store.db.prepare('SELECT id, data FROM workspace_entries WHERE workspace_id = ?').raw().all(id) as [Buffer, Buffer][];
    assert.ok(rows.length > 0 && rows.every(([, d]) => d.readUInt32LE(0) === 0xffffffff), 'every segment is packed');
    forgetRecentCaches();
    const before = loadCache(store, id);
    // Rewrite every row plain, as a format-2 writer stored it: the same cache loads.
    const upd = store.db.prepare('UPDATE workspace_entries SET data = ? WHERE workspace_id = ? AND id = ?');
    for (const [sid, d] of rows) upd.run(unpackSegment(d), id, sid);
    forgetRecentCaches();
    const plain = loadCache(store, id);
    for (const k of ['nameOffsets', 'parent', 'kind', 'mode', 'ino', 'size', 'mtimeNs', 'ctimeNs', 'serial'] as const) assert.deepEqual(plain[k], before[k], k);
    assert.equal((await client.workspaceStatus(ws.id)).clean, true);
    // A flipped byte inside a packed frame: refused (the frame or the segment id fails).
    const [sid, d] = rows[0]!;
    const bad = Buffer.from(d);
    bad[8 + ((bad.length - 8) >> 1)]! ^= 0x10;
    upd.run(bad, id, sid);
    forgetRecentCaches();
    assert.throws(() => loadCache(store, id), isCorrupt);
  } finally {
    store.close();
    client.close();
  }
});
