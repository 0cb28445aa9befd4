// Write-behind of spool files (lib/fuse/spool.ts, native/napi_write_behind.cc): a WRITE is
// answered once its payload is queued, a background thread writes it into the spool file.
// Reads of pages still queued see the written bytes; a background write that fails (a full file
// system under the spool directory: a real 4 MiB tmpfs) is sticky: FLUSH/FSYNC, later writes and
// reads report it, a commit refuses the file with a typed error and stores nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, constants as fsc, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { open as openFile, readFile } from 'node:fs/promises';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LayerFsError } from '../../lib/errors.js';
import { ROOT_SERIAL, Store } from '../../lib/store/index.js';
import { Overlay } from '../../lib/fuse/overlay.js';
import { commitFuse } from '../../lib/fuse/index.js';
import { chunkAndHash, readChunks, writeBehind, writeBehindDrain, writeBehindPending, writeBehindRead } from '../../lib/native/index.js';
import { seededBytes } from '../helpers/tmp.js';
import { errnoOf, setupStore, withMount } from './helpers.js';
import { assertWrittenAndCommitted, directDescriptors, fileSpooledOverlay, withSpooledOverlay } from './spool-helpers.js';

// Large aligned pieces go to the spool with O_DIRECT only when $LAYERFS_SPOOL_DIRECT is 1 (the
// addon reads it at its first write-behind, after these imports): this file checks that mode, and
// its daemons inherit it; every other test file runs the buffered default.
process.env.LAYERFS_SPOOL_DIRECT = '1';

const E = constants.errno;
const fromHex = (h: string) => Buffer.from(h, 'hex');
const isRoot = process.getuid?.() === 0;

test('read-after-write through a mount: pages still queued read back as written', async () => {
  const s = await setupStore(() => {});
  try {
    await withMount(s, async (m) => {
      const size = 48 * 1024 * 1024;
      const data = seededBytes(18, size);
      const f = await openFile(join(m.path, 'big.bin'), 'w+');
      try {
        // 1 MiB writes, each read back at once, and the whole file read back before close.
        for (let pos = 0; pos < size; pos += 1 << 20) {
          await f.write(data, pos, 1 << 20, pos);
          const back = Buffer.alloc(1 << 20);
          const { bytesRead } = await f.read(back, 0, 1 << 20, pos);
          assert.equal(bytesRead, 1 << 20);
          assert.ok(back.equals(data.subarray(pos, pos + (1 << 20))), `read-after-write at ${pos}`);
        }
        // Overwrites in the middle, unaligned, read back before anything else.
        const patch = seededBytes(19, 100_000);
        await f.write(patch, 0, patch.length, 7_777_777);
        patch.copy(data, 7_777_777);
        const whole = Buffer.alloc(size);
        const { bytesRead } = await f.read(whole, 0, size, 0);
        assert.equal(bytesRead, size);
        assert.ok(whole.equals(data));
        await f.sync();
      } finally {
        await f.close();
      }
      const c = await commitFuse(s.storePath, m.workspaceId);
      assert.equal(c.outcome, 'Created');
      // After the commit the bytes come from the Store.
      const stored = createHash('sha256').update(await readFile(join(m.path, 'big.bin'))).digest('hex');
      assert.equal(stored, createHash('sha256').update(data).digest('hex'));
    });
    assert.equal(s.client.verify().ok, true);
  } finally {
    s.client.close();
  }
});

/** An overlay on Branch main whose spools are always files in `spoolDir` (memory budget 0). */
test('a failed background write is sticky: flush, write and read report it, the commit refuses the file', { skip: !isRoot && 'mounts a tmpfs (root)' }, async () => {
  const { dir, storePath, client } = await setupStore(() => {}, 'layerfs-wb-');
  const spoolDir = join(dir, 'spool');
  mkdirSync(spoolDir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', spoolDir]);
  const store = Store.open(storePath);
  try {
    const head = client.branch('main').headCommitId;
    // Spools always in files (memory budget 0), on a 4 MiB file system.
    const ov = fileSpooledOverlay(store, client, spoolDir);
    const { serial, fh } = ov.create(ROOT_SERIAL, Buffer.from('big.bin'), 0o644);
    const chunk = seededBytes(5, 1 << 20);
    // Writes are answered before they reach the spool: the failure shows at a later request.
    let failed = 0;
    for (let i = 0; i < 8 && failed === 0; i++) failed = errnoOf(() => ov.write(fh, chunk, i << 20));
    if (failed === 0) failed = errnoOf(() => ov.flush(fh));
    assert.equal(failed, E.ENOSPC);
    assert.equal(writeBehindPending(), 0);
    // Sticky: every later flush, write and read reports it again.
    assert.equal(errnoOf(() => ov.flush(fh)), E.ENOSPC);
    assert.equal(errnoOf(() => ov.write(fh, chunk.subarray(0, 10), 0)), E.ENOSPC);
    assert.equal(errnoOf(() => ov.read(fh, Buffer.alloc(10), 10, 0)), E.ENOSPC);
    // The commit refuses the file with a typed error naming it, and stores nothing.
    assert.throws(
      () => ov.commitSync(),
      (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_NO_SPACE' && e.message.includes('/big.bin'),
    );
    assert.equal(client.branch('main').headCommitId, head);
    // Truncated to 0 the content is known again: written small, it commits.
    ov.ftruncate(fh, 0);
    assert.equal(errnoOf(() => ov.flush(fh)), 0);
    ov.write(fh, Buffer.from('fits\n'), 0);
    ov.flush(fh);
    ov.release(fh);
    const c = ov.commitSync();
    assert.equal(c.outcome, 'Created');
    assert.equal(ov.getattr(serial).size, 5);
    assert.equal(client.verify().ok, true);
  } finally {
    store.close();
    client.close();
    execFileSync('umount', ['-l', spoolDir]);
  }
});

test('flush of a read-only handle and of a file without spool answers at once', async () => {
  const { dir, storePath, client } = await setupStore(() => {}, 'layerfs-wb-');
  mkdirSync(join(dir, 'spool'));
  const store = Store.open(storePath);
  try {
    const info = client.branch('main');
    const ov = new Overlay(store, fromHex(info.rootId), { branchId: fromHex(info.id), expectedHead: null, expectedBase: fromHex(info.baseLayerId) }, { spoolDir: join(dir, 'spool') });
    const { serial, fh } = ov.create(ROOT_SERIAL, Buffer.from('a'), 0o644);
    ov.write(fh, Buffer.from('abc'), 0);
    ov.flush(fh);
    const ro = ov.open(serial, fsc.O_RDONLY);
    ov.flush(ro);
    ov.release(ro);
    ov.release(fh);
  } finally {
    store.close();
    client.close();
  }
});


test('large aligned pieces reach the spool file with O_DIRECT, mixed with buffered ones; the direct descriptor closes with the spool', async () => {
  await withSpooledOverlay('layerfs-wb-', (ov, spoolDir) => {
    const { serial, fh } = ov.create(ROOT_SERIAL, Buffer.from('big.bin'), 0o644);
    const size = 6 << 20;
    const model = seededBytes(31, size);
    for (let pos = 0; pos < size; pos += 1 << 20) ov.write(fh, model.subarray(pos, pos + (1 << 20)), pos);
    ov.flush(fh);
    assert.equal(directDescriptors(spoolDir).length, 1, 'one O_DIRECT descriptor on the spool file');
    // Buffered pieces (small or unaligned) over direct ones, direct ones over buffered ones.
    const edits: [number, number][] = [[5, 3000], [1_048_570, 20], [(1 << 20) + 4096, 128 << 10], [3 << 20, 100], [(3 << 20) - 4096, 256 << 10], [size - 7, 7]];
    edits.forEach(([pos, len], i) => {
      const piece = seededBytes(40 + i, len);
      ov.write(fh, piece, pos);
      piece.copy(model, pos);
    });
    // Past the end, aligned: the file grows by a direct write after a hole.
    const tail = seededBytes(50, 512 << 10);
    ov.write(fh, tail, size + (1 << 20));
    assertWrittenAndCommitted(ov, serial, fh, Buffer.concat([model, Buffer.alloc(1 << 20), tail]));
    assert.deepEqual(directDescriptors(spoolDir), [], 'no O_DIRECT descriptor left once the spool is gone');
  });
});

test('a file written with O_DIRECT reads back through the read-ahead: windowed 64 KiB reads across slots, a write between reads, a jump back; readChunks; nothing stays open', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'layerfs-ra-'));
  const path = join(dir, 'spool.bin');
  const fd = openSync(path, fsc.O_RDWR | fsc.O_CREAT, 0o600);
  try {
    // 13.5 MiB + 5 bytes: three 4 MiB read-ahead slots and a short one, then an unaligned tail.
    const size = (27 << 19) + 5;
    const model = seededBytes(61, size);
    for (let pos = 0; pos < size; pos += 1 << 20) assert.equal(writeBehind(fd, model.subarray(pos, Math.min(size, pos + (1 << 20))), pos), 0);
    assert.equal(writeBehindDrain(fd), 0);
    assert.ok(directDescriptors(dir).length >= 1, 'written with O_DIRECT');
    const readAll = (from: number, to: number, piece: number): Buffer => {
      const out = Buffer.alloc(to - from);
      for (let pos = from; pos < to; pos += piece) {
        const want = Math.min(piece, to - pos);
        assert.equal(writeBehindRead(fd, out.subarray(pos - from, pos - from + want), pos), want, `read at ${pos}`);
      }
      return out;
    };
    assert.ok(readAll(0, size, 64 << 10).equals(model), 'sequential 64 KiB reads');
    // Past the end: nothing.
    assert.equal(writeBehindRead(fd, Buffer.alloc(10), size), 0);
    // Half-way, a write lands: the reads after it see it (the read-ahead is dropped and restarted).
    assert.ok(readAll(0, 6 << 20, 64 << 10).equals(model.subarray(0, 6 << 20)));
    const edit = seededBytes(62, 1 << 20);
    assert.equal(writeBehind(fd, edit, 7 << 20), 0);
    assert.equal(writeBehindDrain(fd), 0);
    edit.copy(model, 7 << 20);
    assert.ok(readAll(6 << 20, size, 64 << 10).equals(model.subarray(6 << 20)), 'the write is seen');
    // A jump back into a read-ahead that ran on, then reads spanning slots in one call.
    assert.ok(readAll(2 << 20, 11 << 20, 64 << 10).equals(model.subarray(2 << 20, 11 << 20)));
    assert.ok(readAll(1 << 20, 3 << 20, 256 << 10).equals(model.subarray(1 << 20, 3 << 20)));
    assert.ok(readAll(3 << 20, size, 3 << 20).equals(model.subarray(3 << 20)), 'reads of 3 MiB');
    // The commit's ChunkReader reads it with O_DIRECT through its own read-ahead: the same chunks as in memory.
    const want = chunkAndHash(model);
    const got: { length: number; id: string }[] = [];
    for await (const p of readChunks(path)) p.lengths.forEach((len, i) => got.push({ length: len, id: p.ids.subarray(i * 32, i * 32 + 32).toString('hex') }));
    assert.deepEqual(got, want.map((c) => ({ length: c.length, id: c.id.toString('hex') })));
    // A read-ahead left running part-way stops when the descriptor is released.
    readAll(0, 3 << 20, 64 << 10);
    assert.ok(directDescriptors(dir).length >= 2, 'the read-ahead holds a direct descriptor');
    assert.equal(writeBehindDrain(fd, true), 0);
    assert.deepEqual(directDescriptors(dir), [], 'released: no O_DIRECT descriptor left');
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
});
