import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isLayerFsError } from '../../lib/errors.js';
import { walkTree, walkTreeSync, walkName, walkRelPath, WalkKind, type WalkResult } from '../../lib/native/index.js';
import { walkTree as importWalk } from '../../lib/store/import/walk.js';
import { tempDir } from '../helpers/tmp.js';
import { loaderFlags } from '../../lib/workspace/node-child.js';

const dir = tempDir('layerfs-walk-');
let server: net.Server | undefined;
const p = (...parts: string[]): string => path.join(dir, ...parts);
const NON_UTF8 = Buffer.from([0x66, 0xff, 0xfe, 0x2e, 0x62]); // "f\xff\xfe.b"

before(async () => {
  fs.mkdirSync(p('a/deep/deeper'), { recursive: true });
  fs.mkdirSync(p('b'));
  fs.mkdirSync(p('empty'));
  fs.writeFileSync(p('a/deep/deeper/leaf'), 'leaf');
  fs.writeFileSync(p('top.txt'), 'top');
  fs.writeFileSync(p('B-upper'), 'upper sorts before lower');
  fs.writeFileSync(p('a/one'), '1');
  fs.writeFileSync(p('a/two'), '22');
  fs.linkSync(p('a/one'), p('b/one-link'));
  fs.symlinkSync('a', p('link-to-dir'));
  fs.symlinkSync('nowhere', p('dangling'));
  fs.writeFileSync(Buffer.concat([Buffer.from(p('b') + '/'), NON_UTF8]), 'bytes');
  for (let i = 0; i < 300; i++) fs.writeFileSync(p('b', `f${i}`), String(i));
  spawnSync('mkfifo', [p('fifo')]);
  server = net.createServer();
  await new Promise<void>((resolve) => server!.listen(p('sock'), resolve));
});

after(() => server?.close());

function asEntries(w: WalkResult) {
  return Array.from({ length: w.count }, (_, i) => ({ name: walkName(w, i).toString('hex'), parent: w.parent[i] }));
}

test('the order is the import walk order: siblings by name bytes, contiguous, parents first', async () => {
  const w = await walkTree(dir);
  const ref = importWalk(dir);
  assert.equal(w.count, ref.length);
  assert.deepEqual(
    asEntries(w),
    ref.map((e) => ({ name: e.name.toString('hex'), parent: e.parent })),
  );
  assert.equal(w.parent[0], -1);
  assert.equal(walkName(w, 0).length, 0);
  for (let i = 1; i < w.count; i++) assert.ok(w.parent[i]! < i, 'parent before child');
  assert.equal(w.nameOffsets.length, w.count + 1);
  assert.equal(w.nameOffsets[w.count], w.names.length);
  const rels = Array.from({ length: w.count }, (_, i) => walkRelPath(w, i));
  assert.ok(rels.some((r) => r.equals(Buffer.concat([Buffer.from('b/'), NON_UTF8]))), 'non-UTF-8 name kept as bytes');
  assert.ok(rels.some((r) => r.toString() === 'a/deep/deeper/leaf'));
});

test('every entry carries its own lstat: kind, mode, ino, size, mtime, ctime; symlinks are not followed', async () => {
  const w = await walkTree(dir);
  const kinds = new Map<string, number>();
  for (let i = 0; i < w.count; i++) {
    const rel = walkRelPath(w, i);
    const abs = rel.length ? Buffer.concat([Buffer.from(dir + '/'), rel]) : Buffer.from(dir);
    const st = fs.lstatSync(abs, { bigint: true });
    assert.equal(w.ino[i], st.ino, `ino of ${rel}`);
    assert.equal(w.size[i], st.size, `size of ${rel}`);
    assert.equal(w.mtimeNs[i], st.mtimeNs, `mtime of ${rel}`);
    assert.equal(w.ctimeNs[i], st.ctimeNs, `ctime of ${rel}`);
    assert.equal(w.mode[i], Number(st.mode & 0o7777n), `mode of ${rel}`);
    kinds.set(rel.toString(), w.kind[i]!);
  }
  assert.equal(kinds.get(''), WalkKind.Dir);
  assert.equal(kinds.get('top.txt'), WalkKind.File);
  assert.equal(kinds.get('empty'), WalkKind.Dir);
  assert.equal(kinds.get('link-to-dir'), WalkKind.Symlink);
  assert.equal(kinds.get('dangling'), WalkKind.Symlink);
  assert.equal(kinds.get('fifo'), WalkKind.Fifo);
  assert.equal(kinds.get('sock'), WalkKind.Socket);
  assert.ok(![...kinds.keys()].some((k) => k.startsWith('link-to-dir/')), 'a symlink to a directory is not descended');
  const one = [...kinds.keys()].indexOf('a/one');
  const link = [...kinds.keys()].indexOf('b/one-link');
  assert.equal(w.ino[one], w.ino[link], 'hard links share an inode');
});

test('sync and async, one thread or many: the same result', async () => {
  const a = await walkTree(dir, { threads: 1 });
  const b = await walkTree(dir, { threads: 8 });
  const c = walkTreeSync(dir, { threads: 3 });
  const d = walkTreeSync(dir + '///');
  for (const x of [b, c, d]) {
    assert.equal(x.count, a.count);
    assert.ok(x.names.equals(a.names));
    for (const k of ['nameOffsets', 'parent', 'kind', 'mode', 'ino', 'size', 'mtimeNs', 'ctimeNs'] as const) assert.deepEqual(x[k], a[k], k);
  }
});

test('many walks at once on the shared pool', async () => {
  const results = await Promise.all(Array.from({ length: 12 }, (_, i) => walkTree(dir, { threads: 1 + (i % 4) })));
  for (const r of results) assert.equal(r.count, results[0]!.count);
});

test('a root that is missing, a file or a symlink is a typed error', async () => {
  await assert.rejects(walkTree(p('missing')), (e: unknown) => isLayerFsError(e, 'ERR_NATIVE_IO') && e.details.errno === 'ENOENT' && e.path === p('missing'));
  assert.throws(() => walkTreeSync(p('top.txt')), (e: unknown) => isLayerFsError(e, 'ERR_NATIVE_IO') && e.details.errno === 'ENOTDIR');
  await assert.rejects(walkTree(p('link-to-dir')), (e: unknown) => isLayerFsError(e, 'ERR_NATIVE_IO') && e.details.errno === 'ENOTDIR');
  const w = await walkTree(p('empty'));
  assert.equal(w.count, 1);
});

/** Walks `root` as an unprivileged user (root reads every directory): the error as JSON, or null. */
function walkAsNobody(root: string, sync: boolean): Record<string, unknown> | null {
  const lib = fileURLToPath(new URL('../../lib/native/index.ts', import.meta.url));
  const script = `
    if (process.getuid() === 0) { process.setgid(65534); process.setuid(65534); }
    const { walkTree, walkTreeSync } = await import(${JSON.stringify(lib)});
    try { ${sync ? 'walkTreeSync' : 'await walkTree'}(${JSON.stringify(root)}); console.log('null'); }
    catch (e) { console.log(JSON.stringify({ code: e.code, path: e.path, errno: e.details.errno, syscall: e.details.syscall })); }`;
  const r = spawnSync(process.execPath, [...loaderFlags(), '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as Record<string, unknown> | null;
}

test('an unreadable directory, or an entry that cannot be stat-ed, fails the walk with its path and errno', () => {
  const locked = p('locked');
  fs.mkdirSync(path.join(locked, 'inner'), { recursive: true });
  fs.mkdirSync(path.join(locked, 'nosearch'));
  fs.writeFileSync(path.join(locked, 'nosearch', 'file'), 'x');
  const modes: [string, number][] = [[dir, fs.statSync(dir).mode & 0o7777]];
  try {
    fs.chmodSync(dir, 0o755);
    fs.chmodSync(path.join(locked, 'inner'), 0);
    for (const sync of [false, true]) {
      assert.deepEqual(walkAsNobody(locked, sync), { code: 'ERR_NATIVE_IO', path: path.join(locked, 'inner'), errno: 'EACCES', syscall: 'open' });
    }
    fs.chmodSync(path.join(locked, 'inner'), 0o755);
    // Readable but not searchable: the names list, their lstat fails.
    fs.chmodSync(path.join(locked, 'nosearch'), 0o444);
    assert.deepEqual(walkAsNobody(locked, false), { code: 'ERR_NATIVE_IO', path: path.join(locked, 'nosearch', 'file'), errno: 'EACCES', syscall: 'lstat' });
  } finally {
    fs.chmodSync(path.join(locked, 'inner'), 0o755);
    fs.chmodSync(path.join(locked, 'nosearch'), 0o755);
    for (const [d, m] of modes) fs.chmodSync(d, m);
    fs.rmSync(locked, { recursive: true });
  }
});

test('entries deleted while walks run are absent, never an error', async () => {
  const churn = p('churn');
  fs.mkdirSync(churn);
  let stop = false;
  const make = () => {
    for (let i = 0; i < 50; i++) {
      fs.mkdirSync(path.join(churn, `d${i}`), { recursive: true });
      fs.writeFileSync(path.join(churn, `d${i}`, 'f'), 'x');
      fs.writeFileSync(path.join(churn, `f${i}`), 'x');
    }
  };
  make();
  const walks = (async () => {
    for (let k = 0; k < 40 && !stop; k++) {
      const w = await walkTree(churn, { threads: 2 });
      for (let i = 1; i < w.count; i++) assert.ok(w.parent[i]! < i);
    }
  })();
  for (let k = 0; k < 20; k++) {
    fs.rmSync(churn, { recursive: true, force: true });
    fs.mkdirSync(churn, { recursive: true });
    make();
    await new Promise((r) => setImmediate(r));
  }
  stop = true;
  await walks.catch((e: unknown) => {
    // The root itself may be missing for an instant between rm and mkdir.
    if (!(isLayerFsError(e, 'ERR_NATIVE_IO') && e.details.errno === 'ENOENT' && e.path === churn)) throw e;
  });
  fs.rmSync(churn, { recursive: true, force: true });
});

test('arguments are checked', async () => {
  await assert.rejects(walkTree(''), (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT'));
  assert.throws(() => walkTreeSync(dir, { threads: 0 }), (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT'));
  assert.throws(() => walkTreeSync(dir, { threads: 65 }), (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT'));
  assert.throws(() => walkTreeSync(Buffer.from('a\0b')), (e: unknown) => isLayerFsError(e, 'ERR_INVALID_ARGUMENT'));
});

test('worker threads terminated mid-walk do not crash the process; later walks still work', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
  // Each worker loads the addon directly (its own Node-API env) and leaves walks on the pool.
  const worker =
    `import { createRequire } from 'node:module'; import { parentPort } from 'node:worker_threads';` +
    ` const require = createRequire('${root}/package.json'); const b = require('node-gyp-build')('${root}');` +
    ` for (let i = 0; i < 40; i++) b.walkTree(Buffer.from(${JSON.stringify(dir)}), 2).catch(() => {});` +
    ` parentPort.postMessage('go'); b.walkTreeSync(Buffer.from(${JSON.stringify(dir)}), 2);`;
  const script =
    `import { Worker } from 'node:worker_threads';` +
    `const n = await import(${JSON.stringify(root + '/lib/native/index.ts')});` +
    `for (let i = 0; i < 6; i++) {` +
    `  const w = new Worker(${JSON.stringify(worker)}, { eval: true });` +
    `  await new Promise((r) => w.once('message', r)); await new Promise((r) => setTimeout(r, 3 * i));` +
    `  await w.terminate();` +
    `}` +
    `const w = await n.walkTree(${JSON.stringify(dir)}); console.log('ok', w.count > 300);` +
    `for (let i = 0; i < 8; i++) n.walkTree(${JSON.stringify(dir)});` +
    `setTimeout(() => process.exit(0), 1);`;
  const r = spawnSync(process.execPath, [...loaderFlags(), '--input-type=module', '-e', script], { encoding: 'utf8', cwd: root });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /ok true/);
});
