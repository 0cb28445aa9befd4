/** Range edits of Workspace files: validation first, all or nothing, both projections. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, truncateSync, writeFileSync, openSync, readSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { detachStale, fuseAvailable } from '../../lib/fuse/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

async function setup(projection: 'materialize' | 'fuse') {
  const dir = tempDir('layerfs-ranges-');
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  writeFileSync(join(src, 'a.txt'), 'hello world\n');
  writeFileSync(join(src, 'd/b.bin'), seededBytes(7, 300_000));
  const client = Client.create(join(dir, 'store.sqlite'));
  const layer = (await client.initLayerStack({ name: 'p', source: src })).layer.id;
  client.forkBranch({ name: 'b', layer });
  const ws = await client.createWorkspace('b', { at: join(dir, 'ws'), projection });
  return { dir, client, ws };
}

function expected(data: Buffer, edits: { start: number; deleteLength: number; replacement: Buffer }[]): Buffer {
  let out = data;
  for (const e of [...edits].sort((a, b) => b.start - a.start)) out = Buffer.concat([out.subarray(0, e.start), e.replacement, out.subarray(e.start + e.deleteLength)]);
  return out;
}

test('materialize: length-preserving and length-changing range edits, then commit', async () => {
  const { client, ws } = await setup('materialize');
  try {
    const big = seededBytes(7, 300_000);
    const edits = [
      { path: 'd/b.bin', start: 4096, deleteLength: 4096, replacement: Buffer.alloc(4096, 0xab) },
      { path: 'd/b.bin', start: 200_000, deleteLength: 10, replacement: { zero: 10 } },
      { path: 'a.txt', start: 6, deleteLength: 5, replacement: Buffer.from('range edits') },
    ];
    const r = client.editWorkspaceFileRanges(ws.id, edits);
    assert.deepEqual(r, { files: 2, edits: 3, bytesWritten: 4096 + 10 + 6 });
    assert.equal(readFileSync(join(ws.path, 'a.txt'), 'utf8'), 'hello range edits\n');
    const want = expected(big, [
      { start: 4096, deleteLength: 4096, replacement: Buffer.alloc(4096, 0xab) },
      { start: 200_000, deleteLength: 10, replacement: Buffer.alloc(10) },
    ]);
    assert.deepEqual(readFileSync(join(ws.path, 'd/b.bin')), want);
    assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
    assert.deepEqual(client.cat('b', 'd/b.bin'), want);
    assert.equal(client.cat('b', 'a.txt').toString(), 'hello range edits\n');
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('validation first: a bad edit anywhere changes nothing', async () => {
  const { client, ws } = await setup('materialize');
  try {
    const good = { path: 'a.txt', start: 0, deleteLength: 5, replacement: Buffer.from('HELLO') };
    const cases: [unknown, string][] = [
      [{ path: 'a.txt', start: 10, deleteLength: 5, replacement: Buffer.from('x') }, 'ERR_INVALID_ARGUMENT'],
      [{ path: 'nope.txt', start: 0, deleteLength: 0, replacement: Buffer.from('x') }, 'ERR_NOT_FOUND'],
      [{ path: '../a.txt', start: 0, deleteLength: 0, replacement: Buffer.from('x') }, 'ERR_UNSAFE_PATH'],
      [{ path: 'd', start: 0, deleteLength: 0, replacement: Buffer.from('x') }, 'ERR_INVALID_ARGUMENT'],
      [{ path: 'a.txt', start: -1, deleteLength: 0, replacement: Buffer.from('x') }, 'ERR_INVALID_ARGUMENT'],
      [{ path: 'a.txt', start: 0, deleteLength: 0, replacement: 'text' }, 'ERR_INVALID_ARGUMENT'],
      [{ path: 'a.txt', start: 3, deleteLength: 2, replacement: Buffer.from('zz') }, 'ERR_INVALID_ARGUMENT'], // overlaps `good`
    ];
    for (const [badEdit, code] of cases) {
      assert.throws(() => client.editWorkspaceFileRanges(ws.id, [good, badEdit as never]), { code }, JSON.stringify(badEdit));
      assert.equal(readFileSync(join(ws.path, 'a.txt'), 'utf8'), 'hello world\n');
    }
    assert.throws(() => client.editWorkspaceFileRanges(ws.id, []), { code: 'ERR_INVALID_ARGUMENT' });
    assert.equal((await client.workspaceStatus(ws.id)).clean, true);
  } finally {
    client.close();
  }
});

test('a 4 KiB length-preserving edit of a 1 GiB file writes 4 KiB', async () => {
  const { client, ws } = await setup('materialize');
  try {
    const p = join(ws.path, 'huge.img');
    writeFileSync(p, '');
    truncateSync(p, 1024 ** 3);
    const t = performance.now();
    const r = client.editWorkspaceFileRanges(ws.id, [{ path: 'huge.img', start: 512 * 1024 ** 2, deleteLength: 4096, replacement: Buffer.alloc(4096, 7) }]);
    const ms = performance.now() - t;
    assert.equal(r.bytesWritten, 4096);
    assert.ok(ms < 500, `took ${ms} ms`);
    const fd = openSync(p, 'r');
    const b = Buffer.alloc(4098);
    readSync(fd, b, 0, 4098, 512 * 1024 ** 2 - 1);
    closeSync(fd);
    assert.equal(b[0], 0);
    assert.equal(b[1], 7);
    assert.equal(b[4096], 7);
    assert.equal(b[4097], 0);
  } finally {
    client.close();
  }
});

const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

test('FUSE: range edits through the mount, committed by the daemon', { skip: fuseSkip, timeout: 120_000 }, async () => {
  const { client, ws } = await setup('fuse');
  try {
    const big = seededBytes(7, 300_000);
    const edits = [
      { path: 'd/b.bin', start: 150_000, deleteLength: 4096, replacement: Buffer.alloc(4096, 0x5a) },
      { path: 'a.txt', start: 0, deleteLength: 5, replacement: Buffer.from('goodbye') },
    ];
    client.editWorkspaceFileRanges(ws.id, edits);
    assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
    assert.deepEqual(client.cat('b', 'd/b.bin'), expected(big, [{ start: 150_000, deleteLength: 4096, replacement: Buffer.alloc(4096, 0x5a) }]));
    assert.equal(client.cat('b', 'a.txt').toString(), 'goodbye world\n');
    await client.endWorkspace(ws.id);
    assertIntact(client);
  } finally {
    await client.stopDaemon({ discard: true }).catch(() => {});
    await detachStale(ws.path).catch(() => false);
    client.close();
  }
});
