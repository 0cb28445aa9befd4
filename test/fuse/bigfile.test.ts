// A 4 KiB overwrite in the middle of a large stored file: the write copies one page, and the
// commit re-chunks only the neighbourhood (a few chunks and extent nodes, not the file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { commitFuse, stopDaemon, unmountWorkspace } from '../../lib/fuse/index.js';
import { seededBytes } from '../helpers/tmp.js';
import { mountBranch, setupStore, withMount } from './helpers.js';

const SIZE = 64 * 1024 * 1024;
const PIECE = 4 * 1024 * 1024;

function pieceOf(i: number): Buffer {
  return seededBytes(1000 + i, PIECE);
}

test('a 4 KiB write into a large file commits only its neighbourhood', async () => {
  const s = await setupStore((src) => {
    const fd = openSync(join(src, 'large.bin'), 'w');
    for (let i = 0; i < SIZE / PIECE; i++) writeSync(fd, pieceOf(i));
    closeSync(fd);
  }, 'layerfs-big-');
  const at = 37 * 1024 * 1024 + 8192;
  const patch = seededBytes(4242, 4096);
  let commitMs = 0;
  await withMount(s, async (m) => {
    const f = join(m.path, 'large.bin');
    const fh = await open(f, 'r+');
    await fh.write(patch, 0, patch.length, at);
    await fh.close();
    const before = s.client.info().objects;
    const c = await commitFuse(s.storePath, m.workspaceId);
    assert.equal(c.outcome, 'Created');
    if (c.outcome !== 'Created') return;
    commitMs = c.ms;
    // A few chunks around the page, one or two extent nodes per level, the inode page, the root.
    assert.ok(c.chunksHashed <= 6, `chunks hashed: ${c.chunksHashed}`);
    assert.ok(c.bytesRead <= 256 * 1024, `bytes read to re-chunk: ${c.bytesRead}`);
    assert.ok(c.objectsInserted <= 12, `objects inserted: ${c.objectsInserted}`);
    assert.ok(c.bytesInserted <= 64 * 1024, `bytes inserted: ${c.bytesInserted}`);
    assert.equal(s.client.info().objects - before, c.objectsInserted);
    assert.equal((await stat(f)).size, SIZE);
  });
  // The committed file is the original with the patch, byte for byte.
  const again = await mountBranch(s);
  try {
    const data = await readFile(join(again.path, 'large.bin'));
    const h = createHash('sha256');
    for (let i = 0; i < SIZE / PIECE; i++) {
      const p = Buffer.from(pieceOf(i));
      const start = i * PIECE;
      if (at >= start && at < start + PIECE) patch.copy(p, at - start);
      h.update(p);
    }
    assert.equal(createHash('sha256').update(data).digest('hex'), h.digest('hex'));
  } finally {
    await unmountWorkspace(s.storePath, again.workspaceId, { discard: true });
    await stopDaemon(s.storePath, { discard: true });
  }
  assert.equal(s.client.verify().ok, true);
  process.stdout.write(`# commit of a 4 KiB write into a ${SIZE >> 20} MiB file: ${commitMs.toFixed(1)} ms\n`);
});
