import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isLayerFsError } from '../../lib/errors.js';
import { chunkAndHash, readChunks, type ChunkPiece, type ChunkStream, type ReadChunksOptions } from '../../lib/native/index.js';
import { seededBytes } from './helpers.js';
import { loaderFlags } from '../../lib/workspace/node-child.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
let dir = '';
const p = (name: string): string => path.join(dir, name);

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-stream-'));
});

after(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

async function drain(s: ChunkStream, release = true): Promise<{ pieces: ChunkPiece[]; lengths: number[]; ids: Buffer; bytes: Buffer }> {
  const pieces: ChunkPiece[] = [];
  const lengths: number[] = [];
  const ids: Buffer[] = [];
  const bytes: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const piece = await s.next();
    if (!piece) break;
    assert.equal(piece.offset, offset, 'pieces are contiguous');
    assert.equal(piece.ids.length, piece.lengths.length * 32);
    assert.equal(piece.data.length, [...piece.lengths].reduce((a, b) => a + b, 0));
    assert.ok(piece.lengths.length > 0, 'no empty pieces');
    offset += piece.data.length;
    lengths.push(...piece.lengths);
    ids.push(Buffer.from(piece.ids));
    bytes.push(Buffer.from(piece.data));
    pieces.push(piece);
    if (release) s.release(piece);
  }
  assert.equal(await s.next(), null, 'the end is sticky');
  s.close();
  return { pieces, lengths, ids: Buffer.concat(ids), bytes: Buffer.concat(bytes) };
}

async function checkFile(name: string, data: Buffer, opts: ReadChunksOptions = {}): Promise<number> {
  fs.writeFileSync(p(name), data);
  const r = await drain(readChunks(p(name), opts));
  const ref = chunkAndHash(data, opts.params);
  assert.deepEqual(r.lengths, ref.map((c) => c.length), `${name}: cut points`);
  assert.ok(r.ids.equals(Buffer.concat(ref.map((c) => c.id))), `${name}: chunk ids`);
  assert.ok(r.bytes.equals(data), `${name}: bytes`);
  return r.pieces.length;
}

describe('readChunks: same chunks as chunkAndHash on the whole file', () => {
  test('random data of awkward sizes, default and smallest pieces', async () => {
    const sizes = [1, 8191, 8192, 8193, 32768, 32769, 131072, 1048575, 1048576, 1048577, 3 * 1048576 + 12345];
    for (const [i, size] of sizes.entries()) {
      const data = seededBytes(100 + i, size);
      await checkFile(`r${i}`, data);
      // pieceSize = maxSize: every piece carries a chunk tail into the next.
      await checkFile(`r${i}`, data, { pieceSize: 32768 });
    }
  });

  test('zeros (every chunk forced at maxSize), custom params, more read-ahead', async () => {
    await checkFile('zeros', Buffer.alloc(2 * 1048576 + 100));
    const params = { minSize: 1024, avgSize: 4096, maxSize: 16384 };
    const pieces = await checkFile('params', seededBytes(7, 600_000), { params, pieceSize: 16384, readAhead: 5 });
    assert.ok(pieces > 30);
  });

  test('an empty file has no pieces', async () => {
    fs.writeFileSync(p('empty'), '');
    const s = readChunks(p('empty'));
    assert.equal(s.size, 0);
    assert.equal(await s.next(), null);
    s.close();
  });

  test('async iteration', async () => {
    const data = seededBytes(9, 2_500_000);
    fs.writeFileSync(p('iter'), data);
    let total = 0;
    for await (const piece of readChunks(p('iter'), { pieceSize: 65536 })) total += piece.data.length;
    assert.equal(total, data.length);
  });
});

describe('readChunks: take(), waiting on the calling thread', () => {
  /** Every piece by take(), each released before the next is taken. */
  function takeAll(s: ChunkStream): { lengths: number[]; ids: Buffer; bytes: Buffer; pieces: number } {
    const lengths: number[] = [];
    const ids: Buffer[] = [];
    const bytes: Buffer[] = [];
    let offset = 0;
    let pieces = 0;
    for (let piece = s.take(); piece; piece = s.take()) {
      assert.equal(piece.offset, offset, 'pieces are contiguous');
      offset += piece.data.length;
      lengths.push(...piece.lengths);
      ids.push(Buffer.from(piece.ids));
      bytes.push(Buffer.from(piece.data));
      s.release(piece);
      assert.equal(piece.data.length, 0, 'a released piece reads as empty');
      pieces++;
    }
    assert.equal(s.take(), null, 'the end is sticky');
    s.close();
    return { lengths, ids: Buffer.concat(ids), bytes: Buffer.concat(bytes), pieces };
  }

  test('the same pieces as next(): cut points, ids and bytes of a whole-file chunking', () => {
    for (const [i, size] of [0, 1, 8192, 1048577, 5 * 1048576 + 777].entries()) {
      const data = seededBytes(300 + i, size);
      fs.writeFileSync(p(`t${i}`), data);
      for (const opts of [{}, { pieceSize: 65536, readAhead: 1 }, { pieceSize: 32768, readAhead: 4 }]) {
        const s = readChunks(p(`t${i}`), opts);
        const r = takeAll(s);
        const ref = chunkAndHash(data);
        assert.deepEqual(r.lengths, ref.map((c) => c.length), `${size} bytes: cut points`);
        assert.ok(r.ids.equals(Buffer.concat(ref.map((c) => c.id))), `${size} bytes: chunk ids`);
        assert.ok(r.bytes.equals(data), `${size} bytes: bytes`);
        assert.ok(s.blocksAllocated <= 8, `${s.blocksAllocated} blocks`);
      }
    }
  });

  test('close() closes the file at once: files streamed one after another without returning to the event loop hold no descriptors', () => {
    const data = seededBytes(312, 600_000);
    fs.writeFileSync(p('t-fds'), data);
    const open = () => fs.readdirSync('/proc/self/fd').length;
    const before = open();
    let most = 0;
    for (let i = 0; i < 200; i++) {
      const s = readChunks(p('t-fds'), { pieceSize: 65536 });
      let n = 0;
      for (let piece = s.take(); piece; piece = s.take()) {
        n += piece.data.length;
        s.release(piece);
      }
      s.close();
      assert.equal(n, data.length);
      most = Math.max(most, open() - before);
    }
    assert.ok(most <= 2, `${most} descriptors more than before while streaming 200 files`);
  });

  test('a file changed while read throws ERR_FILE_CHANGED, sticky; take() after close throws; next() and take() mix', async () => {
    const f = p('t-changed');
    fs.writeFileSync(f, seededBytes(310, 4 * 1048576));
    const s = readChunks(f, { pieceSize: 65536, readAhead: 1 });
    assert.ok(s.take());
    fs.truncateSync(f, 1048576);
    assert.throws(() => {
      while (s.take());
    }, (e: unknown) => isLayerFsError(e, 'ERR_FILE_CHANGED') && e.path === f);
    assert.throws(() => s.take(), (e: unknown) => isLayerFsError(e, 'ERR_FILE_CHANGED'));
    s.close();
    assert.throws(() => s.take());
    const data = seededBytes(311, 3 * 1048576);
    fs.writeFileSync(p('t-mix'), data);
    const m = readChunks(p('t-mix'), { pieceSize: 65536 });
    const parts: Buffer[] = [];
    for (let k = 0; ; k++) {
      const piece = k % 2 === 0 ? m.take() : await m.next();
      if (!piece) break;
      parts.push(Buffer.from(piece.data));
      m.release(piece);
    }
    m.close();
    assert.ok(Buffer.concat(parts).equals(data));
  });
});

describe('readChunks: memory', () => {
  test('released pieces are reused: blocks stay bounded by read-ahead, not file size', async () => {
    const data = seededBytes(11, 8 * 1048576);
    fs.writeFileSync(p('mem'), data);
    const s = readChunks(p('mem'), { pieceSize: 65536, readAhead: 2 });
    const { pieces } = await drain(s);
    assert.ok(pieces.length >= 120);
    assert.ok(s.blocksAllocated <= 8, `${s.blocksAllocated} blocks for ${pieces.length} pieces`);
    // A released piece reads as empty, never as another piece's bytes.
    assert.equal(pieces[0]!.data.length, 0);
    assert.equal(pieces[0]!.lengths.length > 0, true);
  });

  test('release ignores Buffers the stream did not hand out', async () => {
    fs.writeFileSync(p('rel'), seededBytes(12, 100_000));
    const s = readChunks(p('rel'));
    const piece = (await s.next())!;
    const foreign = Buffer.from('not a piece');
    s.release({ ...piece, data: foreign });
    assert.equal(foreign.toString(), 'not a piece');
    s.release({ ...piece, data: piece.data.subarray(1) });
    assert.equal(piece.data.length, 100_000);
    s.release(piece);
    s.release(piece);
    assert.equal(piece.data.length, 0);
    s.close();
  });
});

describe('readChunks: changes and errors', () => {
  test('expect: another file, or the same file changed since the scan, is ERR_FILE_CHANGED', async () => {
    fs.writeFileSync(p('e'), seededBytes(13, 200_000));
    const st = fs.statSync(p('e'), { bigint: true });
    const expect = { dev: st.dev, ino: st.ino, size: Number(st.size), mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs };
    const s = readChunks(p('e'), { expect });
    assert.equal((await drain(s)).bytes.length, 200_000);
    for (const bad of [{ ...expect, size: 1 }, { ...expect, ino: expect.ino + 1n }, { ...expect, mtimeNs: expect.mtimeNs + 1n }]) {
      assert.throws(() => readChunks(p('e'), { expect: bad }), (e: unknown) => isLayerFsError(e, 'ERR_FILE_CHANGED') && e.path === p('e'));
    }
    fs.symlinkSync('e', p('e-link'));
    assert.throws(() => readChunks(p('e-link'), { expect }), (e: unknown) => isLayerFsError(e, 'ERR_FILE_CHANGED'));
  });

  test('a file truncated or appended to while read rejects with ERR_FILE_CHANGED', async () => {
    for (const change of ['truncate', 'append'] as const) {
      const f = p(`c-${change}`);
      fs.writeFileSync(f, seededBytes(14, 4 * 1048576));
      const s = readChunks(f, { pieceSize: 65536, readAhead: 1 });
      await s.next();
      if (change === 'truncate') fs.truncateSync(f, 1048576);
      else fs.appendFileSync(f, 'more');
      const rest = async (): Promise<void> => {
        while (await s.next());
      };
      await assert.rejects(rest(), (e: unknown) => isLayerFsError(e, 'ERR_FILE_CHANGED') && e.path === f);
      // The failure is sticky.
      await assert.rejects(s.next(), (e: unknown) => isLayerFsError(e, 'ERR_FILE_CHANGED'));
      s.close();
    }
  });

  test('open errors carry errno; symlinks are never followed; directories are refused', () => {
    assert.throws(() => readChunks(p('missing')), (e: unknown) => isLayerFsError(e, 'ERR_NATIVE_IO') && e.details.errno === 'ENOENT' && e.path === p('missing'));
    fs.writeFileSync(p('target'), 'x');
    fs.symlinkSync('target', p('link'));
    assert.throws(() => readChunks(p('link')), (e: unknown) => isLayerFsError(e, 'ERR_NATIVE_IO') && e.details.errno === 'ELOOP');
    fs.mkdirSync(p('adir'));
    assert.throws(() => readChunks(p('adir')), (e: unknown) => isLayerFsError(e, 'ERR_NATIVE_IO') && e.details.errno === 'EINVAL');
  });

  test('close rejects a pending next(); later calls reject too', async () => {
    fs.writeFileSync(p('close'), seededBytes(15, 4 * 1048576));
    const s = readChunks(p('close'), { pieceSize: 65536 });
    const pending = s.next();
    s.close();
    s.close();
    // The piece may already have been ready; either way nothing hangs.
    await pending.catch(() => undefined);
    await assert.rejects(s.next());
  });

  test('arguments are checked', () => {
    const invalid = (arg: string) => (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT') && e.details.argument === arg;
    fs.writeFileSync(p('args'), 'x');
    assert.throws(() => readChunks(p('args'), { pieceSize: 1000 }), invalid('options.pieceSize'));
    assert.throws(() => readChunks(p('args'), { pieceSize: 1 << 30 }), invalid('options.pieceSize'));
    assert.throws(() => readChunks(p('args'), { readAhead: 0 }), invalid('options.readAhead'));
    assert.throws(() => readChunks(p('args'), { expect: { size: 1 } as never }), invalid('options.expect'));
    assert.throws(() => readChunks(p('args'), { params: { avgSize: 1000 } as never }), invalid('options.params.avgSize'));
    assert.throws(() => readChunks(''), invalid('path'));
  });
});

describe('readChunks: lifecycle', () => {
  const run = (code: string): { status: number | null; out: string } => {
    const r = spawnSync(process.execPath, [...loaderFlags(), '--input-type=module', '-e', code], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  };

  test('a stream left open does not keep the process alive', () => {
    fs.writeFileSync(p('open'), seededBytes(16, 3 * 1048576));
    const r = run(`import { readChunks } from './lib/native/index.ts'; const s = readChunks(${JSON.stringify(p('open'))}); const x = await s.next(); console.log('got', x.data.length > 0);`);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /got true/);
  });

  test('worker threads terminated mid-stream do not crash the process', () => {
    fs.writeFileSync(p('w'), seededBytes(17, 16 * 1048576));
    const worker =
      `import { createRequire } from 'node:module'; import { parentPort } from 'node:worker_threads';` +
      ` const require = createRequire('${root}/package.json'); const b = require('node-gyp-build')('${root}');` +
      ` const s = new b.ChunkStream(Buffer.from(${JSON.stringify(p('w'))}), { params: undefined, pieceSize: 65536, readAhead: 4, expect: undefined });` +
      ` parentPort.postMessage('go'); for (;;) { const x = await s.next(); if (!x) break; }`;
    const r = run(
      `import { Worker } from 'node:worker_threads';` +
        `const n = await import('./lib/native/index.ts');` +
        `for (let i = 0; i < 4; i++) {` +
        `  const w = new Worker(${JSON.stringify(worker)}, { eval: true });` +
        `  await new Promise((r) => w.once('message', r)); await new Promise((r) => setTimeout(r, 5 * i));` +
        `  await w.terminate();` +
        `}` +
        `const s = n.readChunks(${JSON.stringify(p('w'))}); let t = 0; for await (const x of s) t += x.data.length; console.log('ok', t);`,
    );
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /ok 16777216/);
  });
});
