// Write-behind of spool files (lib/fuse/spool.ts, native/napi_write_behind.cc): a WRITE is
// answered once its payload is queued, a background thread writes it into the spool file.
// Reads of pages still queued see the written bytes; a background write that fails (a full file
// system under the spool directory: a real 4 MiB tmpfs) is sticky: FLUSH/FSYNC, later writes and
// reads report it, a commit refuses the file with a typed error and stores nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants as fsc, mkdirSync } from 'node:fs';
import { open as openFile, readFile } from 'node:fs/promises';
import { constants } from 'node:os';
import { join } from 'node:path';
import { LayerFsError } from '../../lib/errors.js';
import { ROOT_SERIAL, Store } from '../../lib/store/index.js';
import { Overlay } from '../../lib/fuse/overlay.js';
import { commitFuse } from '../../lib/fuse/index.js';
import { writeBehindPending } from '../../lib/native/index.js';
import { seededBytes } from '../helpers/tmp.js';
import { errnoOf, setupStore, withMount } from './helpers.js';

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

test('a failed background write is sticky: flush, write and read report it, the commit refuses the file', { skip: !isRoot && 'mounts a tmpfs (root)' }, async () => {
  const { dir, storePath, client } = await setupStore(() => {}, 'layerfs-wb-');
  const spoolDir = join(dir, 'spool');
  mkdirSync(spoolDir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', spoolDir]);
  const store = Store.open(storePath);
  try {
    const info = client.branch('main');
    const head = info.headCommitId;
    // Spools always in files (memory budget 0), on a 4 MiB file system.
    const ov = new Overlay(store, fromHex(info.rootId), { branchId: fromHex(info.id), expectedHead: head ? fromHex(head) : null, expectedBase: fromHex(info.baseLayerId) }, { spoolDir, memoryBudget: 0 });
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
