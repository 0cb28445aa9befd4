import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fdRead, fdWrite, fdWritev } from '../../lib/native/index.js';
import { seededBytes } from './helpers.js';

const E = os.constants.errno;

test('fdRead/fdWrite move bytes once per call and report failures as -errno', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-fd-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'f');
  const data = seededBytes(7, 100_000);
  const w = fs.openSync(file, 'w');
  assert.equal(fdWrite(w, data, 60_000), 60_000);
  assert.equal(fdWrite(w, data.subarray(60_000), 40_000), 40_000);
  assert.equal(fdWrite(w, data, 0), 0);
  fs.closeSync(w);
  assert.deepEqual(fs.readFileSync(file), data);

  const r = fs.openSync(file, 'r');
  const buf = Buffer.alloc(70_000);
  assert.equal(fdRead(r, buf), 70_000);
  assert.deepEqual(buf, data.subarray(0, 70_000));
  assert.equal(fdRead(r, buf), 30_000);
  assert.equal(fdRead(r, buf), 0); // end of file
  // Writing to a read-only descriptor, and using a closed one: errno, not an exception.
  assert.equal(fdWrite(r, data, 10), -E.EBADF);
  fs.closeSync(r);
  assert.equal(fdRead(r, buf), -E.EBADF);

  assert.throws(() => fdWrite(1, data, data.length + 1), RangeError);
  assert.throws(() => fdRead(-1, buf), RangeError);
  assert.throws(() => fdRead(0, 'x' as unknown as Uint8Array), TypeError);
});

test('fdWritev writes its buffers in order in one call and reports failures as -errno', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-fdwritev-'));
  try {
    const file = path.join(dir, 'f');
    const fd = fs.openSync(file, 'w');
    const parts = [Buffer.from('head'), seededBytes(7, 70_000), Buffer.alloc(0), seededBytes(8, 3)];
    assert.equal(fdWritev(fd, parts), 70_007);
    fs.closeSync(fd);
    assert.ok(fs.readFileSync(file).equals(Buffer.concat(parts)));
    const ro = fs.openSync(file, 'r');
    assert.equal(fdWritev(ro, [Buffer.from('x')]), -os.constants.errno.EBADF);
    fs.closeSync(ro);
    assert.throws(() => fdWritev(ro, []), (e: unknown) => (e as { code?: string }).code === 'ERR_INVALID_ARGUMENT');
    assert.throws(() => fdWritev(ro, Array.from({ length: 65 }, () => Buffer.from('x'))), (e: unknown) => (e as { code?: string }).code === 'ERR_INVALID_ARGUMENT');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
