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
import { idOf, ObjectKind } from '../../lib/store/object-id.js';
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

/** Raw chunks filling `data` (lengths cut by a seeded generator), as putChecked takes them. */
function checkedPiece(data: Buffer, seed: number): { spec: Float64Array; ids: Buffer; starts: number[] } {
  const starts: number[] = [];
  const spec: number[] = [];
  const ids: Buffer[] = [];
  let k = seed;
  for (let at = 0; at < data.length; ) {
    k = (k * 1103515245 + 12345) % 2147483648;
    const n = Math.min(data.length - at, 1 + (k % 40000));
    starts.push(at);
    spec.push(at, n, 0, 0, n);
    ids.push(idOf(ObjectKind.Chunk, data.subarray(at, at + n)));
    at += n;
  }
  return { spec: new Float64Array(spec), ids: Buffer.concat(ids), starts };
}

test(`putChecked: chunks verified on the output thread; a bad one ends the output before its bytes (seed ${SEED})`, () => {
  const dir = tempDir();
  const data = seededBytes(SEED + 1, 6 * 1024 * 1024 + 7);
  const pieces = [data.subarray(0, 1 << 20), data.subarray(1 << 20, 3 << 20), data.subarray(3 << 20)];
  // Whole and exact, checked pieces mixed with plain ones.
  const file = join(dir, 'ok.bin');
  let fd = openSync(file, 'w');
  let out = new FdOutput(fd);
  const never = (): never => assert.fail('no chunk should fail');
  try {
    pieces.forEach((p, i) => {
      if (i === 1) return out.put(p);
      const c = checkedPiece(p, SEED + i);
      out.putChecked(p, c.spec, c.ids, never);
    });
    out.finish();
  } finally {
    out.close();
    closeSync(fd);
  }
  assert.ok(readFileSync(file).equals(data));

  // A wrong id in the first piece (written on the caller's thread) or in a later one (the output thread).
  for (const bad of [0, 2]) {
    const f = join(dir, `bad-${bad}.bin`);
    fd = openSync(f, 'w');
    out = new FdOutput(fd);
    const specs = pieces.map((p, i) => checkedPiece(p, SEED + i));
    const c = specs[bad]!;
    const chunk = c.starts.length >> 1;
    c.ids[32 * chunk]! ^= 1;
    let reported: [number, number] | undefined;
    const onBad = (piece: number, k: number): never => {
      reported = [piece, k];
      throw new LayerFsError('ERR_CORRUPT', 'a chunk did not verify');
    };
    try {
      assert.throws(() => {
        pieces.forEach((p, i) => out.putChecked(p, specs[i]!.spec, specs[i]!.ids, onBad));
        out.finish();
      }, { code: 'ERR_CORRUPT' });
      assert.throws(() => out.finish(), { code: 'ERR_CORRUPT' }, 'kept');
    } finally {
      out.close();
      closeSync(fd);
    }
    assert.deepEqual(reported, [bad + 1, chunk]);
    const got = readFileSync(f);
    const end = pieces.slice(0, bad).reduce((a, p) => a + p.length, 0) + c.starts[chunk]!;
    assert.equal(got.length, end, 'everything before the bad chunk, nothing of it or after');
    assert.ok(got.equals(data.subarray(0, end)));
  }
});
