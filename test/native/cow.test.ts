// Golden tests of the native copy-on-write core (native/cow.h through lib/native/cow.ts): fixed
// inputs give exactly these page maps, read plans, changed ranges and re-chunk replacements.
// Cut points are part of the on-disk format, so a change to any number here is a format change.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunkLengths, COW_PAGE, CowPages, CowSource, DOMAIN, objectId } from '../../lib/native/index.js';
import { LayerFsError } from '../../lib/errors.js';
import { CowFile } from './cow-support.js';
import { goldenInput } from './golden-input.js';

const S = CowSource.Spool;
const B = CowSource.Base;
const Z = CowSource.Zero;

test('the page is 4 KiB', () => {
  assert.equal(COW_PAGE, 4096);
});

test('writes copy only the edge pages they cover in part, once', () => {
  const p = new CowPages(20_000);
  // Inside one page: that page's stored bytes first.
  assert.deepEqual(p.write(5000, 10), [{ start: 4096, len: 4096 }]);
  p.commitWrite(5000, 10);
  assert.equal(p.dirtyPages, 1);
  // The same page again: nothing to copy, recorded at once.
  assert.equal(p.write(4096, 100), null);
  // Pages 2..3 whole and the start of page 4 (16384..20000 is the stored tail, 3616 bytes).
  assert.deepEqual(p.write(8192, 8192 + 10), [{ start: 16384, len: 3616 }]);
  p.commitWrite(8192, 8192 + 10);
  assert.equal(p.dirtyPages, 4);
  // Whole pages only: no copy.
  assert.equal(p.write(0, 4096), null);
  assert.equal(p.dirtyPages, 5);
  // Past the end: nothing stored there.
  assert.equal(p.write(30_000, 5), null);
  assert.equal(p.size, 30_005);
  assert.equal(p.dirtyPages, 6);
});

test('reads merge dirty pages, the stored prefix and zeros', () => {
  const p = new CowPages(20_000);
  p.write(5000, 10);
  p.commitWrite(5000, 10);
  assert.deepEqual(p.planRead(0, 20_000), [
    { source: B, pos: 0, len: 4096 },
    { source: S, pos: 4096, len: 4096 },
    { source: B, pos: 8192, len: 20_000 - 8192 },
  ]);
  // Truncated below the stored size and extended: the gap reads as zeros.
  p.truncate(10_000);
  assert.equal(p.validBase, 10_000);
  p.truncate(12_000);
  assert.deepEqual(p.planRead(9000, 100_000), [
    { source: B, pos: 9000, len: 1000 },
    { source: Z, pos: 10_000, len: 2000 },
  ]);
  assert.deepEqual(p.planRead(12_000, 10), []);
  // Truncation drops pages past the end; the partial last page stays dirty.
  p.truncate(4100);
  assert.equal(p.dirtyPages, 1);
  p.truncate(4096);
  assert.equal(p.dirtyPages, 0);
  // To zero: no base at all, everything comes from the spool.
  p.truncate(0);
  p.write(0, 3);
  assert.deepEqual(p.planRead(0, 10), [{ source: S, pos: 0, len: 3 }]);
  assert.deepEqual(p.changedRanges(true), [[0, Infinity]]);
});

test('changed ranges: dirty pages merged, and the tail from a truncation or extension', () => {
  const p = new CowPages(100_000);
  p.commitWrite(5000, 1);
  p.commitWrite(9000, 1);
  p.commitWrite(50_000, 5000);
  assert.deepEqual(p.changedRanges(true), [
    [4096, 12288],
    [49152, 57344],
  ]);
  // No extent tree to edit (a whole blob): everything.
  assert.deepEqual(p.changedRanges(false), [[0, Infinity]]);
  p.truncate(52_000);
  assert.deepEqual(p.changedRanges(true), [
    [4096, 12288],
    [49152, Infinity],
  ]);
  p.truncate(200_000);
  p.commitWrite(150_000, 10);
  assert.deepEqual(p.changedRanges(true), [
    [4096, 12288],
    [49152, Infinity],
  ]);
  const q = new CowPages(100_000);
  q.truncate(100_001);
  assert.deepEqual(q.changedRanges(true), [[100_000, Infinity]]);
  q.rebase(100_001);
  assert.deepEqual(q.changedRanges(true), []);
});

test('golden re-chunk: a 4 KiB overwrite in 300,000 bytes replaces the run until cuts meet again', () => {
  const f = new CowFile(goldenInput(1, 300_000));
  assert.deepEqual(f.chunks, [14972, 19097, 18252, 16930, 18536, 18125, 16525, 17149, 10550, 22853, 17436, 12199, 16488, 24584, 12910, 16591, 26803]);
  f.write(goldenInput(2, 4096), 150_000);
  assert.deepEqual(f.pages.changedRanges(true), [[147456, 155648]]);
  assert.equal(f.pages.dirtyPages, 2);
  const r = f.commit();
  assert.deepEqual(r.replaced, [{ from: 139586, to: 243696, lengths: [20161, 18497, 17398, 17676, 30378] }]);
  assert.equal(r.bytesRead, 131072);
  assert.equal(r.chunks, 5);
  assert.deepEqual(f.chunks, chunkLengths(f.base));

  // Truncated into a chunk and extended past the old end.
  f.truncate(200_001);
  f.write(Buffer.from('xyz'), 250_000);
  assert.deepEqual(f.pages.changedRanges(true), [[200_001, Infinity]]);
  const r2 = f.commit();
  assert.deepEqual(r2.replaced, [{ from: 195642, to: 300000, lengths: [32768, 21593] }]);
  assert.equal(r2.bytesRead, 54361);
  assert.deepEqual(f.chunks, chunkLengths(f.base));
});

test('golden re-chunk: two distant changes are two runs, each re-synchronized after one chunk', () => {
  const f = new CowFile(goldenInput(4, 1_000_000));
  f.write(goldenInput(5, 100), 100_000);
  f.write(goldenInput(6, 5000), 700_000);
  assert.deepEqual(f.pages.changedRanges(true), [
    [98304, 102400],
    [696320, 708608],
  ]);
  assert.equal(f.pages.dirtyPages, 4);
  assert.deepEqual(f.pages.planRead(99_000, 10_000), [
    { source: S, pos: 99_000, len: 3400 },
    { source: B, pos: 102_400, len: 6600 },
  ]);
  const r = f.commit();
  assert.deepEqual(r.replaced, [
    { from: 97701, to: 114978, lengths: [17277] },
    { from: 692873, to: 711116, lengths: [18243] },
  ]);
  assert.equal(r.chunks, 2);
  assert.deepEqual(f.chunks, chunkLengths(f.base));
});

test('golden re-chunk with small parameters and a 7-byte read piece', () => {
  const params = { minSize: 64, avgSize: 256, maxSize: 1024 };
  const f = new CowFile(goldenInput(3, 5000), params);
  assert.deepEqual(f.chunks, [301, 306, 396, 342, 293, 416, 296, 315, 396, 292, 435, 403, 342, 358, 109]);
  f.write(Buffer.alloc(10, 7), 2000);
  f.write(Buffer.alloc(10, 9), 4100);
  assert.deepEqual(f.pages.changedRanges(true), [[0, 5000]]);
  const r = f.commit(7);
  assert.deepEqual(r.replaced, [{ from: 0, to: 5000, lengths: [301, 306, 396, 342, 293, 378, 268, 307, 172, 298, 292, 435, 320, 276, 318, 271, 27] }]);
  assert.deepEqual(f.chunks, chunkLengths(f.base, params));
});

test('a new file (no stored extents) is chunked whole', () => {
  const f = new CowFile(Buffer.alloc(0));
  const data = goldenInput(8, 100_000);
  f.write(data.subarray(0, 60_000), 0);
  f.write(data.subarray(60_000), 60_000);
  const r = f.commit();
  assert.equal(r.whole!.length, chunkLengths(data).length);
  assert.deepEqual(r.whole, chunkLengths(data));
  assert.deepEqual(r.replaced, []);
});

test('bad arguments are typed errors; a failing callback stops the re-chunk with its own error', () => {
  const p = new CowPages(10);
  for (const bad of [-1, 1.5, Number.NaN, 2 ** 53]) {
    assert.throws(() => p.write(bad, 1), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_INVALID_ARGUMENT');
  }
  assert.throws(() => p.write(2 ** 53 - 2, 10), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_INVALID_ARGUMENT');
  assert.throws(() => new CowPages(-5), (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_INVALID_ARGUMENT');
  const f = new CowFile(goldenInput(9, 200_000));
  f.write(Buffer.from('x'), 100_000);
  const boom = new LayerFsError('ERR_CORRUPT', 'chunk damaged');
  assert.throws(
    () => f.pages.rechunk(true, { chunkStart: () => 0, read: () => { throw boom; }, emit: () => {}, replace: () => {} }),
    (e: unknown) => e === boom,
  );
  // A callback claiming an old chunk starts past the offset asked about.
  assert.throws(() => f.pages.rechunk(true, { chunkStart: (x) => x + 1, read: () => {}, emit: () => {}, replace: () => {} }), RangeError);
  // The map is unchanged by the failed re-chunks.
  assert.equal(f.pages.dirtyPages, 1);
  assert.ok(f.read(100_000, 1).equals(Buffer.from('x')));
});

test('a large re-chunk hashes on the pool: every chunk once, in order, with its id; a throwing emit stops it', () => {
  const data = goldenInput(11, 24 * 1024 * 1024 + 12345);
  const p = new CowPages(0);
  assert.equal(p.write(0, data.length), null);
  const read = (pos: number, len: number, dst: Buffer) => void data.copy(dst, 0, pos, pos + len);
  const lengths: number[] = [];
  let at = 0;
  const r = p.rechunk(false, {
    chunkStart: () => 0,
    read,
    emit: (offset, bytes, id) => {
      assert.equal(offset, at);
      assert.ok(bytes.equals(data.subarray(at, at + bytes.length)), `chunk at ${offset}`);
      assert.ok(id.equals(objectId(DOMAIN.chunk, bytes)), `id of the chunk at ${offset}`);
      lengths.push(bytes.length);
      at += bytes.length;
    },
    replace: () => assert.fail('no base: nothing is replaced'),
  });
  assert.equal(at, data.length);
  assert.equal(r.chunks, lengths.length);
  assert.deepEqual(lengths, chunkLengths(data));
  // An emit that throws once a batch came back: the error is the caller's, batches in flight are waited for.
  const boom = new Error('stop');
  let seen = 0;
  assert.throws(() => p.rechunk(false, { chunkStart: () => 0, read, emit: () => { if (++seen > 40) throw boom; }, replace: () => {} }), (e: unknown) => e === boom);
  assert.equal(p.rechunk(false, { chunkStart: () => 0, read, emit: () => {}, replace: () => {} }).chunks, lengths.length);
});
