import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FileWriter } from '../../lib/native/file-writer.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

test('the file writer creates files with their bytes, owner, mode and mtime', () => {
  const dir = tempDir();
  const w = new FileWriter(2, 1 << 20);
  const big = seededBytes(7, 3 << 20);
  const files = Array.from({ length: 200 }, (_, i) => ({ p: Buffer.from(join(dir, `f${i}`)), pieces: i % 3 === 0 ? [] : [seededBytes(i, i * 37), Buffer.from('tail')], mode: 0o100000 | (i % 2 ? 0o4755 : 0o444), mtime: 1_600_000_000_123_456_789n + BigInt(i) }));
  for (const f of files) assert.equal(w.put(f.p, f.pieces, f.mode, 1234, 5678, f.mtime, true), true);
  // Larger than the queue's bound: waits for an empty queue, then goes alone.
  assert.equal(w.put(Buffer.from(join(dir, 'big')), [big], 0o600, 0, 0, 0n, false), true);
  assert.equal(w.drain(), null);
  w.close();
  for (const f of files) {
    const st = lstatSync(f.p, { bigint: true });
    assert.deepEqual(readFileSync(f.p), Buffer.concat(f.pieces));
    assert.equal(Number(st.mode) & 0o7777, f.mode & 0o7777);
    assert.equal(st.mtimeNs, f.mtime);
    if (process.getuid?.() === 0) assert.deepEqual([st.uid, st.gid], [1234n, 5678n]);
  }
  assert.deepEqual(readFileSync(join(dir, 'big')), big);
});

test('the file writer reports its first failure with the path and skips what follows', () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'exists'), 'before');
  mkdirSync(join(dir, 'd'));
  const w = new FileWriter(1, 1 << 20);
  const failing = Buffer.from(join(dir, 'exists'));
  assert.equal(w.put(failing, [Buffer.from('x')], 0o644, 0, 0, 0n, false), true);
  const failure = w.drain();
  assert.deepEqual(failure, { path: failing, errno: 17 });
  // Never written over, and nothing more is taken.
  assert.equal(readFileSync(join(dir, 'exists'), 'utf8'), 'before');
  assert.equal(w.put(Buffer.from(join(dir, 'd/after')), [], 0o644, 0, 0, 0n, false), false);
  w.close();
  assert.throws(() => lstatSync(join(dir, 'd/after')), { code: 'ENOENT' });
  assert.throws(() => w.drain());
});
