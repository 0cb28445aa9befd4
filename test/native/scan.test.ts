import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isLayerFsError } from '../../lib/errors.js';
import {
  chunkAndHash,
  DOMAIN,
  getXattrs,
  listXattrs,
  objectId,
  removeXattr,
  scanPaths,
  scanPathsOrThrow,
  setXattr,
  type ScanEntry,
  type ScanEntryOk,
} from '../../lib/native/index.js';
import { seededBytes } from './helpers.js';

let dir = '';
const p = (name: string): string => path.join(dir, name);

function ok(e: ScanEntry | undefined): ScanEntryOk {
  assert.ok(e, 'entry present');
  if (e.error) assert.fail(`unexpected error: ${JSON.stringify(e.error)}`);
  return e;
}

function xattrsSupported(): boolean {
  try {
    setXattr(p('small.txt'), 'user.probe', Buffer.from('1'));
    removeXattr(p('small.txt'), 'user.probe');
    return true;
  } catch {
    return false;
  }
}

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-scan-'));
  fs.writeFileSync(p('small.txt'), 'hello layerfs\n');
  fs.writeFileSync(p('large.bin'), seededBytes(21, 3 * 1024 * 1024 + 123));
  fs.writeFileSync(p('empty'), '');
  fs.mkdirSync(p('sub'));
});

after(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('scanPaths: regular files', () => {
  test('small file: blob id, data, metadata from the same open file', async () => {
    const [e] = await scanPaths([p('small.txt')]);
    const s = ok(e);
    const st = fs.lstatSync(p('small.txt'), { bigint: true });
    assert.equal(s.kind, 'file');
    assert.equal(s.size, 14);
    assert.equal(s.mode, Number(st.mode) & 0o7777);
    assert.equal(s.uid, Number(st.uid));
    assert.equal(s.gid, Number(st.gid));
    assert.equal(s.ino, st.ino);
    assert.equal(s.dev, st.dev);
    assert.equal(s.nlink, 1);
    assert.equal(s.mtimeNs, st.mtimeNs);
    assert.equal(s.ctimeNs, st.ctimeNs);
    assert.deepEqual(s.data, Buffer.from('hello layerfs\n'));
    assert.equal(s.digest?.chunked, false);
    assert.deepEqual(s.digest?.chunks, []);
    assert.deepEqual(s.digest?.contentId, objectId(DOMAIN.blob, Buffer.from('hello layerfs\n')));
  });

  test('large file: chunks + whole-content id; streamed read gives the same digest', async () => {
    const bytes = fs.readFileSync(p('large.bin'));
    const [withData, streamed] = [
      ok((await scanPaths([p('large.bin')]))[0]),
      ok((await scanPaths([p('large.bin')], { readData: false }))[0]),
    ];
    assert.deepEqual(withData.data, bytes);
    assert.equal(streamed.data, undefined);
    for (const s of [withData, streamed]) {
      assert.equal(s.digest?.chunked, true);
      assert.deepEqual(s.digest?.contentId, objectId(DOMAIN.content, bytes));
      assert.deepEqual(
        s.digest?.chunks.map((c) => [c.offset, c.length, c.id.toString('hex')]),
        chunkAndHash(bytes).map((c) => [c.offset, c.length, c.id.toString('hex')]),
      );
    }
  });

  test('maxDataSize: larger files are digested by streaming and returned without data', async () => {
    const bytes = fs.readFileSync(p('large.bin'));
    const limit = 1024 * 1024;
    const [big, small, exact] = (await scanPaths([p('large.bin'), p('small.txt'), p('large.bin')], { maxDataSize: limit })).map(ok);
    assert.equal(big!.data, undefined);
    assert.equal(big!.size, bytes.length);
    assert.deepEqual(big!.digest?.contentId, objectId(DOMAIN.content, bytes));
    assert.deepEqual(
      big!.digest?.chunks.map((c) => [c.length, c.id.toString('hex')]),
      chunkAndHash(bytes).map((c) => [c.length, c.id.toString('hex')]),
    );
    assert.deepEqual(small!.data, Buffer.from('hello layerfs\n'));
    assert.equal(exact!.data, undefined);
    // The limit is inclusive: a file of exactly maxDataSize bytes is still returned whole.
    const [at] = await scanPaths([p('large.bin')], { maxDataSize: bytes.length });
    assert.deepEqual(ok(at).data, bytes);
    const [zero] = await scanPaths([p('empty')], { maxDataSize: 0 });
    assert.deepEqual(ok(zero).data, Buffer.alloc(0));
  });

  test('maxDataSize with digestOversize: false reports metadata only', async () => {
    const st = fs.statSync(p('large.bin'), { bigint: true });
    const [big, small] = (await scanPaths([p('large.bin'), p('small.txt')], { maxDataSize: 4096, digestOversize: false })).map(ok);
    assert.equal(big!.kind, 'file');
    assert.equal(big!.size, Number(st.size));
    assert.equal(big!.ino, st.ino);
    assert.equal(big!.mtimeNs, st.mtimeNs);
    assert.equal(big!.digest, undefined);
    assert.equal(big!.data, undefined);
    assert.ok(small!.digest && small!.data);
    // Without readData every file is streamed: maxDataSize changes nothing.
    const [streamed] = await scanPaths([p('large.bin')], { readData: false, maxDataSize: 4096, digestOversize: false });
    assert.ok(ok(streamed).digest?.chunked);
  });

  test('maxBatchData bounds the bytes a batch returns; the rest are streamed', async () => {
    const bytes = fs.readFileSync(p('large.bin'));
    const paths = Array.from({ length: 6 }, () => p('large.bin'));
    const entries = (await scanPaths(paths, { maxBatchData: 2 * bytes.length, threads: 2 })).map(ok);
    assert.equal(entries.filter((e) => e.data).length, 2);
    for (const e of entries) {
      assert.deepEqual(e.digest?.contentId, objectId(DOMAIN.content, bytes));
      if (e.data) assert.deepEqual(e.data, bytes);
    }
    const lean = (await scanPaths(paths, { maxBatchData: bytes.length, digestOversize: false })).map(ok);
    assert.equal(lean.filter((e) => e.data).length, 1);
    assert.equal(lean.filter((e) => e.digest).length, 1);
    // Small files still fit next to each other.
    const smalls = (await scanPaths(Array.from({ length: 10 }, () => p('small.txt')), { maxBatchData: 140 })).map(ok);
    assert.equal(smalls.filter((e) => e.data).length, 10);
  });

  test('dataArena: files are read into the caller\'s Buffer; what does not fit is streamed', async () => {
    const bytes = fs.readFileSync(p('large.bin'));
    const arena = Buffer.alloc(bytes.length + 100);
    const paths = [p('small.txt'), p('large.bin'), p('large.bin'), p('empty'), p('small.txt')];
    const entries = (await scanPaths(paths, { dataArena: arena, threads: 2 })).map(ok);
    const kept = entries.filter((e) => e.data && e.size > 0);
    assert.equal(kept.length, 3, 'both small files and one of the large ones');
    for (const e of kept) {
      assert.equal(e.data!.buffer, arena.buffer, 'a view of the arena');
      assert.deepEqual(e.data, e.size === bytes.length ? bytes : Buffer.from('hello layerfs\n'));
    }
    const ranges = kept.map((e) => [e.data!.byteOffset - arena.byteOffset, e.data!.byteOffset - arena.byteOffset + e.size]).sort((a, b) => a[0]! - b[0]!);
    for (let i = 1; i < ranges.length; i++) assert.ok(ranges[i]![0]! >= ranges[i - 1]![1]!, 'no overlap');
    const streamed = entries.find((e) => e.size === bytes.length && !e.data)!;
    assert.deepEqual(streamed.digest?.contentId, objectId(DOMAIN.content, bytes));
    assert.deepEqual(entries[3]!.data, Buffer.alloc(0));
  });

  test('smallFileThreshold and params are honoured', async () => {
    const bytes = fs.readFileSync(p('large.bin'));
    const params = { minSize: 1024, avgSize: 4096, maxSize: 16384 };
    const [big] = await scanPaths([p('large.bin')], { smallFileThreshold: bytes.length + 1, readData: false });
    assert.equal(ok(big).digest?.chunked, false);
    assert.deepEqual(ok(big).digest?.contentId, objectId(DOMAIN.blob, bytes));
    const [small] = await scanPaths([p('small.txt')], { smallFileThreshold: 0, params });
    assert.equal(ok(small).digest?.chunked, true);
    assert.deepEqual(ok(small).digest?.contentId, objectId(DOMAIN.content, Buffer.from('hello layerfs\n')));
    const [custom] = await scanPaths([p('large.bin')], { params });
    assert.deepEqual(
      ok(custom).digest?.chunks.map((c) => c.length),
      chunkAndHash(bytes, params).map((c) => c.length),
    );
  });

  test('empty file', async () => {
    const s = ok((await scanPaths([p('empty')]))[0]);
    assert.equal(s.size, 0);
    assert.deepEqual(s.data, Buffer.alloc(0));
    assert.deepEqual(s.digest?.contentId, objectId(DOMAIN.blob));
  });

  test('mode bits include setuid/setgid/sticky; mtime keeps nanoseconds', async () => {
    fs.writeFileSync(p('suid'), 'x');
    fs.chmodSync(p('suid'), 0o6755);
    fs.mkdirSync(p('sticky'));
    fs.chmodSync(p('sticky'), 0o1777);
    const touched = spawnSync('touch', ['-m', '-d', '2021-02-03 04:05:06.123456789 UTC', p('suid')]);
    const [f, d] = (await scanPaths([p('suid'), p('sticky')])).map(ok);
    assert.equal(f!.mode, 0o6755);
    assert.equal(d!.mode, 0o1777);
    assert.equal(d!.kind, 'dir');
    if (touched.status === 0) assert.equal(f!.mtimeNs, 1612325106123456789n);
    assert.equal(f!.mtimeNs, fs.lstatSync(p('suid'), { bigint: true }).mtimeNs);
  });

  test('hard links share ino and report nlink', async () => {
    fs.writeFileSync(p('h1'), 'linked');
    fs.linkSync(p('h1'), p('h2'));
    const [a, b] = (await scanPaths([p('h1'), p('h2')])).map(ok);
    assert.equal(a!.ino, b!.ino);
    assert.equal(a!.dev, b!.dev);
    assert.equal(a!.nlink, 2);
  });

  test('non-UTF-8 file names via Buffer paths', async () => {
    const name = Buffer.concat([Buffer.from(dir + '/'), Buffer.from([0x66, 0xff, 0xfe, 0x80, 0x2e, 0x62])]);
    fs.writeFileSync(name, 'bytes name');
    const [e] = await scanPaths([name]);
    const s = ok(e);
    assert.ok(Buffer.isBuffer(s.path));
    assert.deepEqual(s.path, name);
    assert.deepEqual(s.data, Buffer.from('bytes name'));
  });
});

describe('scanPaths: other kinds', () => {
  test('directory, symlink (not followed), dangling symlink, fifo, socket, char device', async () => {
    fs.symlinkSync('small.txt', p('link'));
    fs.symlinkSync(Buffer.from([0x6e, 0x6f, 0xff]), Buffer.from(p('dangling')));
    const fifo = spawnSync('mkfifo', [p('fifo')]);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(p('sock'), resolve));
    try {
      const paths = [p('sub'), p('link'), p('dangling'), p('sock'), '/dev/null'];
      if (fifo.status === 0) paths.push(p('fifo'));
      const entries = (await scanPaths(paths)).map(ok);
      assert.deepEqual(
        entries.map((e) => e.kind),
        ['dir', 'symlink', 'symlink', 'socket', 'chardev', ...(fifo.status === 0 ? ['fifo'] : [])],
      );
      assert.deepEqual(entries[1]!.linkTarget, Buffer.from('small.txt'));
      assert.equal(entries[1]!.digest, undefined);
      assert.equal(entries[1]!.data, undefined);
      assert.deepEqual(entries[2]!.linkTarget, Buffer.from([0x6e, 0x6f, 0xff]));
      assert.equal(entries[4]!.rdev, Number(fs.statSync('/dev/null').rdev));
      assert.equal(entries[0]!.linkTarget, undefined);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('scanPaths: xattrs', () => {
  test('user.* attributes are reported; other namespaces are not', async (t) => {
    if (!xattrsSupported()) return t.skip('file system does not support user xattrs');
    const f = p('xattr.txt');
    fs.writeFileSync(f, 'x');
    setXattr(f, 'user.one', Buffer.from([0, 1, 2, 255]));
    setXattr(f, 'user.two', 'text value');
    let trusted = false;
    try {
      setXattr(f, 'trusted.hidden', 'root only');
      trusted = true;
    } catch {
      // not root, or not supported: the filter is still checked by user.* only
    }
    fs.mkdirSync(p('xdir'));
    setXattr(p('xdir'), 'user.dir', 'd');
    const [file, d] = (await scanPaths([f, p('xdir')])).map(ok);
    const byName = Object.fromEntries(file!.xattrs.map((x) => [x.name, x.value]));
    assert.deepEqual(Object.keys(byName).sort(), ['user.one', 'user.two']);
    assert.deepEqual(byName['user.one'], Buffer.from([0, 1, 2, 255]));
    assert.deepEqual(byName['user.two'], Buffer.from('text value'));
    assert.deepEqual(d!.xattrs, [{ name: 'user.dir', value: Buffer.from('d') }]);
    assert.deepEqual(getXattrs(f).map((x) => x.name).sort(), ['user.one', 'user.two']);
    if (trusted) assert.ok(listXattrs(f).includes('trusted.hidden'));
    const [none] = await scanPaths([f], { xattrs: false });
    assert.deepEqual(ok(none).xattrs, []);
    removeXattr(f, 'user.one');
    assert.deepEqual(getXattrs(f).map((x) => x.name), ['user.two']);
  });

  test('a binary xattr value (NUL and 0xff) written through the addon scans back byte for byte', async (t) => {
    if (!xattrsSupported()) return t.skip('file system does not support user xattrs');
    const f = p('binary-xattr.txt');
    fs.writeFileSync(f, 'y');
    setXattr(f, 'user.tool', Buffer.from([0x00, 0xff]));
    assert.deepEqual(getXattrs(f), [{ name: 'user.tool', value: Buffer.from([0x00, 0xff]) }]);
    const [e] = await scanPaths([f]);
    assert.deepEqual(ok(e).xattrs, [{ name: 'user.tool', value: Buffer.from([0x00, 0xff]) }]);
  });

  test('xattr helpers report errno as LayerFsError', () => {
    assert.throws(
      () => getXattrs(p('missing')),
      (e: unknown) => isLayerFsError(e, 'ERR_NATIVE_IO') && e.details.errno === 'ENOENT' && e.path === p('missing'),
    );
  });
});

describe('scanPaths: failures are per entry', () => {
  test('ENOENT, ENOTDIR, ELOOP next to a good entry', async () => {
    fs.symlinkSync('loop', p('loop'));
    const entries = await scanPaths([p('missing'), p('small.txt/x'), p('loop/x'), p('small.txt')]);
    assert.deepEqual(
      entries.map((e) => e.error?.errno),
      ['ENOENT', 'ENOTDIR', 'ELOOP', undefined],
    );
    const first = entries[0]!;
    assert.ok(first.error);
    assert.equal(first.error.code, 'ERR_NATIVE_IO');
    assert.equal(first.error.path, p('missing'));
    assert.match(first.error.message, /No such file/);
    ok(entries[3]);
  });

  test('scanPathsOrThrow throws for the first failed entry', async () => {
    await assert.rejects(scanPathsOrThrow([p('small.txt'), p('nope1'), p('nope2')]), (e: unknown) => {
      return isLayerFsError(e, 'ERR_NATIVE_IO') && e.details.errno === 'ENOENT' && e.path === p('nope1');
    });
    const good = await scanPathsOrThrow([p('small.txt')]);
    assert.equal(good[0]!.kind, 'file');
  });

  test('empty batch', async () => {
    assert.deepEqual(await scanPaths([]), []);
  });
});

describe('scanPaths: concurrency', () => {
  test('a file appended to while read is consistent or ERR_FILE_CHANGED, never torn', async (t) => {
    const f = p('growing.log');
    fs.writeFileSync(f, seededBytes(30, 256 * 1024));
    const writer = spawn(process.execPath, [
      '-e',
      // ~4 MB/s of 4 KiB appends for 1.5 s: enough to race every read, small enough to stay cheap.
      `const fs=require('fs');const b=Buffer.alloc(4096,97);const end=Date.now()+1500;` +
        `const s=new Int32Array(new SharedArrayBuffer(4));` +
        `const fd=fs.openSync(${JSON.stringify(f)},'a');while(Date.now()<end){fs.writeSync(fd,b);Atomics.wait(s,0,0,1);}`,
    ]);
    const exited = new Promise((resolve) => writer.on('exit', resolve));
    let consistent = 0;
    let changed = 0;
    try {
      await new Promise((r) => setTimeout(r, 100));
      for (let i = 0; i < 30; i++) {
        const [e] = await scanPaths([f], { retries: i % 3 });
        assert.ok(e);
        if (e.error) {
          assert.equal(e.error.code, 'ERR_FILE_CHANGED', JSON.stringify(e.error));
          assert.equal(e.error.errno, undefined);
          changed++;
        } else {
          assert.equal(e.data?.length, e.size);
          const bytes = e.data!;
          const expected = e.size < 131072 ? objectId(DOMAIN.blob, bytes) : objectId(DOMAIN.content, bytes);
          assert.deepEqual(e.digest?.contentId, expected);
          consistent++;
        }
      }
    } finally {
      await exited;
    }
    assert.equal(consistent + changed, 30);
    t.diagnostic(`${consistent} consistent reads, ${changed} ERR_FILE_CHANGED`);
    // Once the writer has stopped the file is stable and must scan cleanly.
    const [last] = await scanPaths([f]);
    assert.equal(ok(last).data?.length, fs.statSync(f).size);
  });

  test('the JS thread keeps running while a large batch hashes', async (t) => {
    const names: string[] = [];
    const blob = seededBytes(31, 8 * 1024 * 1024);
    for (let i = 0; i < 12; i++) {
      const n = p(`big${i}`);
      fs.writeFileSync(n, blob);
      names.push(n);
    }
    let ticks = 0;
    let last = performance.now();
    let maxGap = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      ticks++;
    }, 2);
    const started = performance.now();
    const entries = await scanPaths(Array.from({ length: 4 }, () => names).flat(), { threads: 2, readData: false });
    const elapsed = performance.now() - started;
    clearInterval(timer);
    assert.equal(entries.filter((e) => !e.error).length, 48);
    t.diagnostic(`${ticks} ticks in ${elapsed.toFixed(0)} ms, longest gap ${maxGap.toFixed(1)} ms`);
    assert.ok(ticks >= Math.min(10, elapsed / 20), `only ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
    assert.ok(maxGap < 250, `event loop blocked for ${maxGap.toFixed(0)} ms`);
  });
});
