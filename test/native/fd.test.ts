import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fdRead, fdWrite, fdWritev, makeNode, RequestReader, writeBehind, writeBehindDrain } from '../../lib/native/index.js';
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

test('RequestReader: a large payload handed to the write-behind is written from its request buffer as it lies, while the next requests are read into other buffers', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-reqreader-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // "Requests" of the largest size read from a file: each read fills a request buffer; bytes
  // 80.. of each (where a WRITE's payload sits, page-aligned) go to the write-behind, large
  // (taken as they lie, O_DIRECT) and small (copied) alternating, and are checked once drained.
  const src = path.join(dir, 'requests');
  const chunk = (1 << 20) + 8192;
  const data = seededBytes(11, chunk * 12);
  fs.writeFileSync(src, data);
  const out = path.join(dir, 'out');
  const o = fs.openSync(out, 'w+');
  const r = fs.openSync(src, 'r');
  const reader = new RequestReader();
  const expected = Buffer.alloc(12 << 20);
  const buffers = new Set<ArrayBufferLike>();
  for (let i = 0; i < 12; i++) {
    assert.equal(reader.read(r), chunk);
    assert.ok(reader.buffer.equals(data.subarray(i * chunk, (i + 1) * chunk)));
    buffers.add(reader.buffer.buffer);
    const len = i % 3 === 2 ? 4096 : 1 << 20;
    const payload = reader.buffer.subarray(80, 80 + len);
    assert.equal(writeBehind(o, payload, i << 20), 0);
    payload.copy(expected, i << 20);
  }
  assert.equal(reader.read(r), 0); // end of file
  assert.equal(writeBehindDrain(o, true), 0);
  const back = fs.readFileSync(out);
  for (let i = 0; i < 12; i++) {
    const len = i % 3 === 2 ? 4096 : 1 << 20;
    assert.ok(back.subarray(i << 20, (i << 20) + len).equals(expected.subarray(i << 20, (i << 20) + len)), `piece ${i}`);
  }
  assert.ok(buffers.size >= 1);
  fs.closeSync(o);
  fs.closeSync(r);
  assert.equal(reader.read(r), -E.EBADF);
});

test('RequestReader.readReady: nothing waiting gives -EAGAIN at once; a request read is held in its own buffer, untouched by later reads, until released', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-reqready-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // A FIFO opened for reading and writing stands in for /dev/fuse: each write is one "request".
  const fifo = path.join(dir, 'fifo');
  assert.equal(makeNode(Buffer.from(fifo), 'p', 0o600), 0);
  const fd = fs.openSync(fifo, fs.constants.O_RDWR);
  const reader = new RequestReader();
  assert.equal(reader.readReady(fd), -E.EAGAIN);
  const a = seededBytes(21, 3000);
  const b = seededBytes(22, 60_000);
  const c = seededBytes(23, 500);
  fs.writeSync(fd, a);
  const ha = reader.readReady(fd);
  assert.ok(typeof ha !== 'number');
  assert.ok(ha.request.equals(a));
  assert.equal(reader.readReady(fd), -E.EAGAIN);
  fs.writeSync(fd, b);
  const hb = reader.readReady(fd);
  assert.ok(typeof hb !== 'number');
  fs.writeSync(fd, c);
  assert.equal(reader.read(fd), c.length);
  assert.ok(reader.buffer.subarray(0, c.length).equals(c));
  // Two more blocking reads (each releases the buffer of the one before): the held ones keep their bytes.
  fs.writeSync(fd, c.subarray(0, 7));
  assert.equal(reader.read(fd), 7);
  assert.ok(ha.request.equals(a), 'the first held request is intact');
  assert.ok(hb.request.equals(b), 'the second held request is intact');
  assert.notEqual(ha.slot, hb.slot);
  reader.release(ha);
  reader.release(hb);
  // Released buffers are read into again: holding and releasing does not grow the pool.
  const seen = new Set<number>();
  for (let i = 0; i < 20; i++) {
    fs.writeSync(fd, a.subarray(0, 100 + i));
    const h = reader.readReady(fd);
    assert.ok(typeof h !== 'number');
    assert.ok(h.request.equals(a.subarray(0, 100 + i)));
    seen.add(h.slot);
    reader.release(h);
  }
  assert.equal(seen.size, 1);
  assert.ok(seen.has(ha.slot) || seen.has(hb.slot));
  fs.closeSync(fd);
  const closed = reader.readReady(fd);
  assert.ok(typeof closed === 'number' && closed < 0);
});
