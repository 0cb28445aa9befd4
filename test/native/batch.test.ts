import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chunkAndHash, DOMAIN, hashBuffers, nativeInfo, objectId } from '../../lib/native/index.js';
import { seededBytes } from './helpers.js';
import { loaderFlags } from '../../lib/workspace/node-child.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('hashBuffers', () => {
  test('small buffers are blobs, large ones are chunked, order is kept', async () => {
    const inputs = [
      Buffer.alloc(0),
      Buffer.from('tiny'),
      seededBytes(40, 131071),
      seededBytes(41, 131072),
      seededBytes(42, 2_000_000),
    ];
    const results = await hashBuffers(inputs);
    assert.equal(results.length, inputs.length);
    results.forEach((r, i) => {
      const data = inputs[i]!;
      assert.equal(r.length, data.length);
      if (data.length < 131072) {
        assert.equal(r.chunked, false);
        assert.deepEqual(r.chunks, []);
        assert.deepEqual(r.contentId, objectId(DOMAIN.blob, data));
      } else {
        assert.equal(r.chunked, true);
        assert.deepEqual(r.contentId, objectId(DOMAIN.content, data));
        assert.deepEqual(
          r.chunks.map((c) => [c.offset, c.length, c.id.toString('hex')]),
          chunkAndHash(data).map((c) => [c.offset, c.length, c.id.toString('hex')]),
        );
      }
    });
  });

  test('threads 1, 2 and 8 agree; options apply', async () => {
    const inputs = Array.from({ length: 40 }, (_, i) => seededBytes(60 + i, 50_000 + i * 7919));
    const opts = { smallFileThreshold: 100_000, params: { minSize: 2048, avgSize: 8192, maxSize: 20000 } };
    const [a, b, c] = await Promise.all([
      hashBuffers(inputs, { ...opts, threads: 1 }),
      hashBuffers(inputs, { ...opts, threads: 2 }),
      hashBuffers(inputs, { ...opts, threads: 8 }),
    ]);
    assert.deepEqual(b, a);
    assert.deepEqual(c, a);
    assert.equal(a.filter((r) => r.chunked).length, inputs.filter((d) => d.length >= 100_000).length);
    const big = inputs.findIndex((d) => d.length >= 100_000);
    assert.deepEqual(
      a[big]!.chunks.map((x) => x.length),
      chunkAndHash(inputs[big]!, opts.params).map((x) => x.length),
    );
  });

  test('many concurrent calls', async () => {
    const data = seededBytes(70, 300_000);
    const all = await Promise.all(Array.from({ length: 50 }, () => hashBuffers([data, data.subarray(5)])));
    for (const r of all) assert.deepEqual(r, all[0]);
    assert.deepEqual(await hashBuffers([]), []);
  });

  test('nativeInfo', () => {
    const info = nativeInfo();
    assert.ok(info.threads >= 1);
    assert.match(info.simd, /^(avx512|avx2|sse41|sse2|neon|portable)$/);
    assert.equal(info.blake3Version, '1.3.1');
    assert.equal(typeof info.version, 'string');
  });
});

describe('lifecycle', () => {
  const run = (code: string): { status: number | null; ms: number; out: string } => {
    const started = Date.now();
    const r = spawnSync(process.execPath, [...loaderFlags(), '--input-type=module', '-e', code], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { status: r.status, ms: Date.now() - started, out: `${r.stdout}${r.stderr}` };
  };

  test('mallocTune fixes the mmap threshold and the arenas of a fresh process, seen by every thread (mallocStreamHeap in a worker); bad values are typed errors', () => {
    const r = run(
      `import { Worker } from 'node:worker_threads';` +
        `import { mallocTune, hashBuffers } from './lib/native/index.ts';` +
        `const ok = mallocTune(256 * 1024, 4);` +
        `const bad = [[1, 4], [256 * 1024, 0], [1.5, 4], [256 * 1024, 65]].map(([t, a]) => { try { mallocTune(t, a); return 'accepted'; } catch (e) { return e.code; } });` +
        `await hashBuffers([Buffer.alloc(4 << 20, 7)], { threads: 4 });` +
        // A worker thread loads the addon anew (as the mount daemon's serving thread does): the answer is the process's.
        `const w = new Worker("const { createRequire } = await import('node:module'); const req = createRequire(process.cwd() + '/package.json'); const addon = req('node-gyp-build')(process.cwd()); const on = addon.mallocStreamHeap(true); addon.mallocStreamHeap(false); (await import('node:worker_threads')).parentPort.postMessage(on);", { eval: true });` +
        `const inWorker = await new Promise((res) => w.once('message', res));` +
        `await w.terminate();` +
        `console.log(JSON.stringify({ ok, inWorker, bad }));`,
    );
    assert.equal(r.status, 0, r.out);
    assert.deepEqual(JSON.parse(r.out.trim().split('\n').pop()!), { ok: true, inWorker: true, bad: ['ERR_INVALID_ARGUMENT', 'ERR_INVALID_ARGUMENT', 'ERR_INVALID_ARGUMENT', 'ERR_INVALID_ARGUMENT'] });
  });

  test('mallocStreamHeap raises a fixed mmap threshold to 2 MiB while large files stream, counted, and nothing where none was fixed', () => {
    const r = run(
      `import { mallocStats, mallocStreamHeap, mallocTune } from './lib/native/index.ts';` +
        `const untuned = mallocStreamHeap(true);` +
        `mallocTune(256 * 1024, 4);` +
        `const keep = [];` +
        // Whether a fresh 1 MiB block is mapped on its own (glibc's mmap bytes grow) or taken from the heap.
        `const mapped = () => { const m0 = mallocStats().mmap; keep.push(Buffer.allocUnsafeSlow(1 << 20)); return mallocStats().mmap - m0 >= 1 << 20; };` +
        `const fixed = mapped();` +
        `const on = [mallocStreamHeap(true), mallocStreamHeap(true)];` +
        `const streaming = mapped();` +
        `mallocStreamHeap(false);` +
        `const oneLeft = mapped();` +
        `mallocStreamHeap(false);` +
        `const after = mapped();` +
        `console.log(JSON.stringify({ untuned, fixed, on, streaming, oneLeft, after }));`,
    );
    assert.equal(r.status, 0, r.out);
    assert.deepEqual(JSON.parse(r.out.trim().split('\n').pop()!), { untuned: false, fixed: true, on: [true, true], streaming: false, oneLeft: false, after: true });
  });

  test('mallocTrimSoon gives freed heap pages back on its own thread, one trim at a time', () => {
    // 1 MiB Buffers from the heap (the mmap threshold raised), every other one freed: holes in
    // the middle of the heap, which free() alone never returns. The trim must take them back.
    const r = run(
      `import v8 from 'node:v8'; import vm from 'node:vm'; import fs from 'node:fs';` +
        `import { mallocTune, mallocTrimSoon } from './lib/native/index.ts';` +
        `v8.setFlagsFromString('--expose-gc'); const gc = vm.runInNewContext('gc');` +
        `mallocTune(32 << 20, 1);` +
        `const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) >> 10;` +
        `let bufs = Array.from({ length: 300 }, (_, i) => Buffer.alloc(1 << 20, i));` +
        `const kept = bufs.filter((_, i) => i % 2); bufs = null; gc(); gc();` +
        `const before = rss(); const first = mallocTrimSoon();` +
        `let again = false; const t = Date.now(); while (!again && Date.now() - t < 10000) { again = mallocTrimSoon(); }` +
        `await new Promise((r) => setTimeout(r, 200));` +
        `console.log(JSON.stringify({ first, again, freedMiB: before - rss(), kept: kept.length }));`,
    );
    assert.equal(r.status, 0, r.out);
    const out = JSON.parse(r.out.trim().split('\n').pop()!) as { first: boolean; again: boolean; freedMiB: number; kept: number };
    assert.equal(out.first, true, 'the first call starts a trim');
    assert.equal(out.again, true, 'a call after the last trim ended starts another');
    assert.ok(out.freedMiB >= 100, `about 150 MiB of holes given back, not ${out.freedMiB} MiB`);
  });

  test('an idle process exits promptly after batch work', () => {
    const r = run(
      `import { hashBuffers, scanPaths } from './lib/native/index.ts';` +
        `const t = Date.now(); await hashBuffers([Buffer.alloc(1 << 20)], { threads: 4 }); await scanPaths(['/etc/hostname']);` +
        `globalThis.__t = t; console.log('done');`,
    );
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /done/);
    assert.ok(r.ms < 20_000, `took ${r.ms} ms`);
  });

  test('worker threads terminated mid-batch do not crash the process', () => {
    // Each worker loads the addon directly (plain ESM eval), giving it its own Node-API env next
    // to the main thread's; it is terminated while its batches are on the shared pool.
    const worker =
      `import { createRequire } from 'node:module'; import { parentPort } from 'node:worker_threads';` +
      ` const require = createRequire('${root}/package.json'); const b = require('node-gyp-build')('${root}');` +
      ` const o = { params: undefined, threads: 2, smallFileThreshold: 131072, readData: true, xattrs: true, retries: 2 };` +
      ` const buf = Buffer.alloc(64 << 20, 1); parentPort.postMessage('go');` +
      ` b.hashBuffers(Array(16).fill(buf), o); b.scanPaths([Buffer.from('/etc/hostname')], o);`;
    const r = run(
      `import { Worker } from 'node:worker_threads';` +
        `const n = await import('./lib/native/index.ts');` +
        `for (let i = 0; i < 4; i++) {` +
        `  const w = new Worker(${JSON.stringify(worker)}, { eval: true });` +
        `  await new Promise((r) => w.once('message', r)); await new Promise((r) => setTimeout(r, 15 * i));` +
        `  await w.terminate();` +
        `}` +
        `const [d] = await n.hashBuffers([Buffer.from('after')]); console.log('ok', d.length);`,
    );
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /ok 5/);
  });
});
