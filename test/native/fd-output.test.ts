// FdOutput: pieces written in order by the addon's thread, held (not copied) until written,
// buffers from buffer() reused only after their bytes went out, failures typed with their errno.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { FdOutput } from '../../lib/native/fd-output.js';
import { makeNode } from '../../lib/native/fd.js';
import { LayerFsError } from '../../lib/errors.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

const SEED = 17;

/** Pieces of many sizes (empty, tiny, a few MiB), some filled into reused buffers. */
function writeAll(out: FdOutput, data: Buffer, seed: number): void {
  let at = 0;
  let k = seed;
  while (at < data.length) {
    k = (k * 1103515245 + 12345) % 2147483648;
    const n = Math.min(data.length - at, [0, 1, 4096, 65536 + (k % 1000), 1 << 20, 3 << 20][k % 6]!);
    if (k % 2 === 0) {
      const b = out.buffer(n);
      data.copy(b, 0, at, at + n);
      out.put(b);
    } else out.put(data.subarray(at, at + n));
    at += n;
  }
}

test(`pieces reach a file in order, reused buffers intact (seed ${SEED})`, () => {
  const dir = tempDir();
  const data = seededBytes(SEED, 24 * 1024 * 1024 + 333);
  const file = join(dir, 'out.bin');
  const fd = openSync(file, 'w');
  const out = new FdOutput(fd, { queueBytes: 2 * 1024 * 1024 });
  try {
    assert.equal(out.pipeSize, 0, 'a file is not a pipe');
    writeAll(out, data, SEED);
    out.finish();
  } finally {
    out.close();
    closeSync(fd);
  }
  assert.ok(readFileSync(file).equals(data));
});

test('a pipe is enlarged and read to the end; a reader that goes away is EPIPE', async () => {
  const dir = tempDir();
  const data = seededBytes(SEED + 1, 8 * 1024 * 1024);
  // A FIFO read by a child: `wc -c` counts it all, `head -c 10` leaves after 10 bytes.
  for (const [cmd, expect] of [['wc -c', 'all'], ['head -c 10 >/dev/null; echo gone', 'epipe']] as const) {
    const fifo = join(dir, `fifo-${expect}`);
    assert.equal(makeNode(Buffer.from(fifo), 'p', 0o600), 0);
    const child = spawn('bash', ['-c', `${cmd} < '${fifo}'`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    const exited = new Promise((r) => child.on('close', r));
    const fd = openSync(fifo, 'w');
    const out = new FdOutput(fd);
    let failure: unknown;
    try {
      assert.ok(out.pipeSize >= 64 * 1024, `pipe size ${out.pipeSize}`);
      writeAll(out, data, SEED);
      out.finish();
    } catch (e) {
      failure = e;
    } finally {
      out.close();
      closeSync(fd);
    }
    await exited;
    if (expect === 'all') {
      assert.equal(failure, undefined);
      assert.equal(text.trim(), String(data.length));
    } else {
      assert.equal(text.trim(), 'gone');
      assert.ok(failure instanceof LayerFsError && failure.code === 'ERR_NATIVE_IO', String(failure));
      assert.equal(failure.details.errno, 'EPIPE');
    }
  }
});

test('a write that fails is thrown with its errno, and kept', () => {
  const dir = tempDir();
  const fd = openSync(join(dir, 'ro'), 'w');
  closeSync(fd);
  const ro = openSync(join(dir, 'ro'), 'r');
  const out = new FdOutput(ro);
  try {
    assert.throws(() => {
      out.put(Buffer.from('x'));
      out.finish();
    }, (e: unknown) => e instanceof LayerFsError && e.code === 'ERR_NATIVE_IO' && e.details.errno === 'EBADF');
    assert.throws(() => out.put(Buffer.from('y')), { code: 'ERR_NATIVE_IO' });
  } finally {
    out.close();
    closeSync(ro);
  }
});
