// The overlay without FUSE: namespace semantics, copy-on-write content, incremental re-chunking
// and commits, driven in-process (nothing is mounted here).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constants as fsc, mkdirSync, readdirSync, symlinkSync, writeFileSync, linkSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { Store, ContentForm, InodeKind, SMALL_FILE_THRESHOLD } from '../../lib/store/index.js';
import { chunkAndHash } from '../../lib/native/index.js';
import { idOf, ObjectKind } from '../../lib/store/index.js';
import { buildExtentTree } from '../../lib/store/tree/extents.js';
const fromHex = (h: string) => Buffer.from(h, 'hex');
import { Overlay, RENAME_EXCHANGE, RENAME_NOREPLACE, XATTR_CREATE } from '../../lib/fuse/overlay.js';
import { errnoOf } from './helpers.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

const E = constants.errno;
const b = (s: string) => Buffer.from(s);

async function setup(files: (src: string) => void = () => {}) {
  const dir = tempDir('layerfs-overlay-');
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib/deep'), { recursive: true });
  writeFileSync(join(src, 'README'), 'readme\n');
  writeFileSync(join(src, 'lib/a.txt'), 'a\n');
  writeFileSync(join(src, 'lib/deep/b.txt'), 'b\n');
  symlinkSync('README', join(src, 'link'));
  linkSync(join(src, 'lib/a.txt'), join(src, 'lib/a-hard'));
  files(src);
  const storePath = join(dir, 'store.sqlite');
  const client = Client.create(storePath);
  const init = await client.initLayerStack({ name: 'proj', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  const spoolDir = join(dir, 'spool');
  mkdirSync(spoolDir);
  const store = Store.open(storePath);
  const open = (branch = 'main', memoryBudget?: number) => {
    const info = client.branch(branch);
    return new Overlay(store, fromHex(info.rootId), { branchId: fromHex(info.id), expectedHead: info.headCommitId ? fromHex(info.headCommitId) : null, expectedBase: fromHex(info.baseLayerId) }, { spoolDir, ...(memoryBudget === undefined ? {} : { memoryBudget }) });
  };
  return { dir, src, client, store, open, spoolDir, close: () => { store.close(); client.close(); } };
}

function readAll(ov: Overlay, serial: number): Buffer {
  const fh = ov.open(serial, fsc.O_RDONLY);
  const size = ov.getattr(serial).size;
  const out = Buffer.alloc(size);
  let pos = 0;
  while (pos < size) pos += ov.read(fh, out.subarray(pos), Math.min(65536, size - pos), pos);
  ov.release(fh);
  return out;
}

function path(ov: Overlay, p: string): number {
  return ov.resolve(p.split('/').filter(Boolean).map((x) => Buffer.from(x)));
}

test('namespace operations follow POSIX and survive a commit', async () => {
  const t = await setup();
  try {
    const ov = t.open();
    const root = 1;
    const lib = path(ov, 'lib');
    assert.equal(ov.getattr(path(ov, 'lib/a.txt')).nlink, 2);
    assert.equal(ov.getattr(path(ov, 'lib/a.txt')).ino, ov.getattr(path(ov, 'lib/a-hard')).ino);
    assert.equal(ov.readlink(path(ov, 'link')).toString(), 'README');
    assert.equal(errnoOf(() => path(ov, 'nope')), E.ENOENT);
    assert.equal(errnoOf(() => path(ov, 'README/x')), E.ENOTDIR);
    // create / O_EXCL / write / O_APPEND / O_TRUNC
    const { serial: f, fh } = ov.create(root, b('new.txt'), 0o644);
    assert.equal(errnoOf(() => ov.create(root, b('new.txt'), 0o644)), E.EEXIST);
    ov.write(fh, b('hello'), 0);
    ov.release(fh);
    const ah = ov.open(f, fsc.O_WRONLY | fsc.O_APPEND);
    ov.write(ah, b(' world'), 0);
    ov.release(ah);
    assert.equal(readAll(ov, f).toString(), 'hello world');
    ov.release(ov.open(path(ov, 'README'), fsc.O_WRONLY | fsc.O_TRUNC));
    assert.equal(ov.getattr(path(ov, 'README')).size, 0);
    // mkdir / rmdir / ENOTEMPTY / unlink on a dir
    const d = ov.mkdir(root, b('d'), 0o755);
    ov.mkdir(d, b('e'), 0o700);
    assert.equal(errnoOf(() => ov.rmdir(root, b('d'))), E.ENOTEMPTY);
    assert.equal(errnoOf(() => ov.unlink(root, b('d'))), E.EISDIR);
    assert.equal(errnoOf(() => ov.rmdir(root, b('README'))), E.ENOTDIR);
    ov.rmdir(d, b('e'));
    // rename: over an existing file, directories, NOREPLACE, EXCHANGE, into itself
    ov.rename(root, b('new.txt'), lib, b('a.txt'));
    assert.equal(readAll(ov, path(ov, 'lib/a.txt')).toString(), 'hello world');
    assert.equal(ov.getattr(path(ov, 'lib/a-hard')).nlink, 1);
    assert.equal(errnoOf(() => ov.rename(lib, b('a.txt'), root, b('README'), RENAME_NOREPLACE)), E.EEXIST);
    ov.rename(lib, b('a.txt'), root, b('README'), RENAME_EXCHANGE);
    assert.equal(readAll(ov, path(ov, 'README')).toString(), 'hello world');
    assert.equal(ov.getattr(path(ov, 'lib/a.txt')).size, 0);
    assert.equal(errnoOf(() => ov.rename(root, b('lib'), path(ov, 'lib/deep'), b('x'))), E.EINVAL);
    assert.equal(errnoOf(() => ov.rename(root, b('lib'), root, b('README'))), E.ENOTDIR);
    assert.equal(errnoOf(() => ov.rename(root, b('README'), root, b('lib'))), E.EISDIR);
    ov.rename(root, b('lib'), d, b('lib2'));
    assert.equal(readAll(ov, path(ov, 'd/lib2/deep/b.txt')).toString(), 'b\n');
    // link / symlink / chmod / xattrs / truncate
    ov.link(path(ov, 'README'), root, b('readme-link'));
    assert.equal(ov.getattr(path(ov, 'README')).nlink, 2);
    assert.equal(errnoOf(() => ov.link(d, root, b('dl'))), E.EPERM);
    ov.symlink(root, b('sym'), b('d/lib2'));
    ov.chmod(path(ov, 'README'), 0o600);
    ov.setxattr(path(ov, 'README'), b('user.k'), b('v'));
    assert.equal(errnoOf(() => ov.setxattr(path(ov, 'README'), b('user.k'), b('v'), XATTR_CREATE)), E.EEXIST);
    assert.equal(errnoOf(() => ov.setxattr(path(ov, 'README'), b('trusted.k'), b('v'))), E.EOPNOTSUPP);
    assert.equal(errnoOf(() => ov.getxattr(path(ov, 'README'), b('user.none'))), E.ENODATA);
    ov.truncate(path(ov, 'README'), 5);
    assert.equal(readAll(ov, path(ov, 'readme-link')).toString(), 'hello');
    // an unlinked file stays readable while open
    const keep = ov.open(path(ov, 'readme-link'), fsc.O_RDONLY);
    ov.unlink(root, b('readme-link'));
    ov.unlink(root, b('README'));
    const buf = Buffer.alloc(5);
    assert.equal(ov.read(keep, buf, 5, 0), 5);
    assert.equal(buf.toString(), 'hello');

    const c = await ov.commit();
    assert.equal(c.outcome, 'Created');
    assert.equal(ov.changed, false);
    ov.release(keep);
    // A fresh overlay of the Commit shows the same tree.
    const fresh = t.open();
    const list = (o: Overlay, s: number) => o.readdir(s).map((e) => e.name.toString()).sort();
    assert.deepEqual(list(fresh, 1), ['d', 'link', 'sym']);
    assert.deepEqual(list(fresh, path(fresh, 'd')), ['lib2']);
    assert.deepEqual(list(fresh, path(fresh, 'd/lib2')), ['a-hard', 'a.txt', 'deep']);
    assert.equal(readAll(fresh, path(fresh, 'd/lib2/a.txt')).length, 0);
    assert.equal(readAll(fresh, path(fresh, 'd/lib2/a-hard')).toString(), 'a\n');
    assert.equal(fresh.readlink(path(fresh, 'sym')).toString(), 'd/lib2');
    assert.equal(fresh.getattr(path(fresh, 'd/lib2')).ino, ov.getattr(path(ov, 'd/lib2')).ino);
    assert.equal(t.client.verify().ok, true);
    // The overlay continues from the new Commit.
    ov.mkdir(1, b('after'), 0o755);
    const c2 = await ov.commit();
    assert.equal(c2.outcome, 'Created');
    assert.equal((await ov.commit()).outcome, 'UpToDate');
    assert.equal(t.client.log('main').length, 2);
    ov.dispose();
    fresh.dispose();
    assert.deepEqual(readdirSync(t.spoolDir), []);
  } finally {
    t.close();
  }
});

test('strict: HeadMoved stores nothing and leaves the overlay as it was', async () => {
  const t = await setup();
  try {
    const a = t.open();
    const bOv = t.open();
    a.mkdir(1, b('from-a'), 0o755);
    bOv.mkdir(1, b('from-b'), 0o755);
    assert.equal((await a.commit()).outcome, 'Created');
    const objects = t.store.counts().objects;
    const r = await bOv.commit(undefined, true);
    assert.equal(r.outcome, 'HeadMoved');
    assert.equal(t.store.counts().objects, objects);
    assert.equal(bOv.changed, true);
    assert.equal(bOv.lookup(1, b('from-b')) > 0, true);
    a.dispose();
    bOv.dispose();
  } finally {
    t.close();
  }
});

test('reconciling: the second overlay commits onto the moved head and then shows both sides, renumbered inodes included', async () => {
  const t = await setup();
  try {
    const a = t.open();
    const bOv = t.open();
    a.mkdir(1, b('from-a'), 0o755);
    const dirB = bOv.mkdir(1, b('from-b'), 0o755);
    const f = bOv.create(dirB, b('f'), 0o644);
    bOv.write(f.fh, b('held open\n'), 0);
    assert.equal((await a.commit()).outcome, 'Created');
    const r = await bOv.commit();
    assert.equal(r.outcome, 'Created');
    assert.ok(r.outcome === 'Created' && r.reconciled && r.reconciled.retries === 0);
    assert.equal(bOv.changed, false);
    // The head's directory is visible in b now; b's own entries are still there.
    assert.ok(bOv.lookup(1, b('from-a')) > 0);
    const dirNow = bOv.lookup(1, b('from-b'));
    const fNow = bOv.lookup(dirNow, b('f'));
    assert.equal(bOv.serialOf(f.fh), fNow, 'the open handle follows its renumbered inode');
    bOv.write(f.fh, b('HELD'), 0);
    bOv.release(f.fh);
    const r2 = await bOv.commit();
    assert.equal(r2.outcome, 'Created');
    assert.equal(t.client.cat('main', 'from-b/f').toString(), 'HELD open\n');
    assert.ok(t.client.ls('main', '').some((e) => e.name === 'from-a'));
    assert.equal(t.client.verify().ok, true);
    a.dispose();
    bOv.dispose();
  } finally {
    t.close();
  }
});

test('mutations submitted during a commit wait for it and land after the cut', async () => {
  const t = await setup();
  try {
    const ov = t.open();
    ov.mkdir(1, b('x'), 0o755);
    const p = ov.commit();
    assert.equal(ov.busy, true);
    let ran = false;
    ov.run(true, () => {
      ov.mkdir(1, b('later'), 0o755);
      ran = true;
    });
    assert.equal(ran, false);
    const r = await p;
    assert.equal(r.outcome, 'Created');
    assert.equal(ran, true);
    assert.equal(ov.changed, true);
    if (r.outcome === 'Created') {
      const view = t.store.view(r.rootId);
      assert.equal(view.child(view.inode(1), b('later')), undefined);
      assert.notEqual(view.child(view.inode(1), b('x')), undefined);
    }
    ov.dispose();
  } finally {
    t.close();
  }
});

function storedExtents(store: Store, rootId: Buffer, name: string): { ids: string[]; form: ContentForm; content: string } {
  const view = store.view(rootId);
  const { inode } = view.resolve([Buffer.from(name)], name);
  assert.equal(inode.kind, InodeKind.File);
  const ov = new Overlay(store, rootId, { branchId: Buffer.alloc(16), expectedHead: null, expectedBase: Buffer.alloc(32) }, { spool: () => { throw new Error('no spool'); } });
  const ids = inode.form === ContentForm.Extents ? ov.cache.chunkIds({ form: inode.form, id: inode.content, size: inode.size }).map((x) => x.toString('hex')) : [];
  return { ids, form: inode.form, content: inode.content!.toString('hex') };
}

for (const [label, budget] of [['spools in memory, spilling to files', undefined], ['spools always in files', 0]] as const)
test(`edits re-chunk only around dirty pages, and equal chunking the whole file (${label})`, async () => {
  const size = 6 * 1024 * 1024 + 123;
  const original = seededBytes(11, size);
  const t = await setup((src) => writeFileSync(join(src, 'big.bin'), original));
  try {
    const ov = t.open('main', budget);
    const f = path(ov, 'big.bin');
    const model = Buffer.from(original);
    const rnd = seededBytes(99, 1 << 16);
    let r = 0;
    const next = (n: number) => {
      const v = rnd.readUInt32LE((r = (r + 4) % (rnd.length - 4)));
      return v % n;
    };
    // A single 4 KiB overwrite in the middle.
    const fh = ov.open(f, fsc.O_RDWR);
    const patch = seededBytes(7, 4096);
    ov.write(fh, patch, 3 * 1024 * 1024);
    patch.copy(model, 3 * 1024 * 1024);
    let c = await ov.commit();
    assert.equal(c.outcome, 'Created');
    if (c.outcome !== 'Created') return;
    const expect = (m: Buffer) => chunkAndHash(m).map((x) => x.id.toString('hex'));
    const expectRoot = (m: Buffer) => buildExtentTree(chunkAndHash(m).map((x) => ({ id: Buffer.from(x.id), length: x.length })), (node) => idOf(ObjectKind.Extents, node)).toString('hex');
    assert.deepEqual(storedExtents(t.store, c.rootId, 'big.bin').ids, expect(model));
    assert.equal(storedExtents(t.store, c.rootId, 'big.bin').content, expectRoot(model));
    assert.ok(c.build.chunksHashed <= 6, `hashed ${c.build.chunksHashed} chunks`);
    assert.ok(c.build.bytesRead <= 256 * 1024, `read ${c.build.bytesRead} bytes`);
    assert.ok(c.write.bytesInserted <= 64 * 1024, `inserted ${c.write.bytesInserted} bytes`);

    // Random unaligned writes, a truncation and an extension, several rounds.
    let cur = model;
    for (let round = 0; round < 6; round++) {
      const ops = 1 + next(5);
      for (let k = 0; k < ops; k++) {
        const kind = next(10);
        if (kind < 7) {
          const len = 1 + next(20000);
          const pos = next(cur.length + 1000);
          const data = seededBytes(1000 + round * 10 + k, len);
          ov.write(fh, data, pos);
          const end = pos + len;
          if (end > cur.length) cur = Buffer.concat([cur, Buffer.alloc(end - cur.length)]);
          data.copy(cur, pos);
        } else if (kind < 9) {
          const ns = Math.max(200_000, cur.length - next(300_000));
          ov.ftruncate(fh, ns);
          cur = ns <= cur.length ? Buffer.from(cur.subarray(0, ns)) : Buffer.concat([cur, Buffer.alloc(ns - cur.length)]);
        } else {
          const ns = cur.length + next(100_000);
          ov.ftruncate(fh, ns);
          cur = Buffer.concat([cur, Buffer.alloc(ns - cur.length)]);
        }
      }
      assert.ok(readAll(ov, f).equals(cur), `round ${round}: reads merge stored chunks and dirty pages`);
      c = await ov.commit();
      assert.equal(c.outcome, 'Created');
      if (c.outcome !== 'Created') return;
      assert.deepEqual(storedExtents(t.store, c.rootId, 'big.bin').ids, expect(cur), `round ${round}: extents equal a whole-file chunking`);
      assert.equal(storedExtents(t.store, c.rootId, 'big.bin').content, expectRoot(cur), `round ${round}: the extent tree equals a fresh build`);
      assert.ok(readAll(ov, f).equals(cur));
    }
    ov.release(fh);
    assert.equal(t.client.verify().ok, true);
    ov.dispose();
  } finally {
    t.close();
  }
});

test('commit() reads spooled files through the pipelined content path and stores what commitSync stores', async () => {
  const t = await setup((src) => {
    writeFileSync(join(src, 'old-small.txt'), 'the stored version of a small file\n'.repeat(40));
    writeFileSync(join(src, 'old-big.bin'), seededBytes(71, 600_000));
  });
  try {
    const layer = t.client.branch('main').baseLayerId;
    t.client.forkBranch({ name: 'other', layer });
    // The same edits in two overlays, with every written byte in spool files (budget 0).
    const edit = (ov: Overlay) => {
      const serials: number[] = [];
      const put = (name: string, data: Buffer, extendTo?: number) => {
        const { serial, fh } = ov.create(1, b(`.${name}.tmp`), 0o644);
        for (let o = 0; o < data.length; o += 100_000) ov.write(fh, data.subarray(o, Math.min(data.length, o + 100_000)), o);
        if (extendTo !== undefined) ov.ftruncate(fh, extendTo);
        ov.release(fh);
        ov.utimens(serial, 1_700_000_000_000_000_000n, 1_700_000_000_000_000_000n);
        ov.rename(1, b(`.${name}.tmp`), 1, b(name));
        serials.push(serial);
      };
      // Replacements of stored files (rsync's way), new files small and large, one extended past what was written.
      put('old-small.txt', Buffer.from('the stored version of a small file, edited\n'.repeat(40)));
      put('old-big.bin', Buffer.concat([seededBytes(71, 300_000), seededBytes(72, 1000), seededBytes(71, 600_000).subarray(300_000)]));
      put('new.txt', Buffer.from('new\n'));
      put('new-big.bin', seededBytes(73, 2_500_000));
      put('holes.bin', seededBytes(74, 5000), 200_000);
      return serials;
    };
    const a = t.open('main', 0);
    const sa = edit(a);
    const ca = a.commitSync();
    const bo = t.open('other', 0);
    const sb = edit(bo);
    const cb = await bo.commit();
    assert.equal(ca.outcome, 'Created');
    assert.equal(cb.outcome, 'Created');
    if (ca.outcome !== 'Created' || cb.outcome !== 'Created') return;
    assert.deepEqual(sa, sb);
    const va = t.store.view(ca.rootId);
    const vb = t.store.view(cb.rootId);
    for (const s of sa) {
      const x = va.inode(s);
      const y = vb.inode(s);
      assert.equal(y.size, x.size);
      assert.equal(y.form, x.form);
      assert.ok(y.content && x.content && y.content.equals(x.content), `serial ${s}: the same content id`);
    }
    assert.ok(readAll(bo, path(bo, 'holes.bin')).equals(Buffer.concat([seededBytes(74, 5000), Buffer.alloc(195_000)])));
    assert.equal(t.client.verify().ok, true);
    a.dispose();
    bo.dispose();
  } finally {
    t.close();
  }
});

test('commitSync reads spooled files ahead in batches: each stored file equals an import of its bytes (seeded)', async () => {
  const seed = Number(process.env.LAYERFS_TEST_SEED ?? Date.now() % 100_000);
  console.log(`seed ${seed}`);
  let x = seed;
  // The high bits: the low ones of this generator repeat with a short period.
  const rand = (n: number) => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 16) % n;
  const t = await setup((src) => {
    for (let i = 0; i < 60; i++) writeFileSync(join(src, `old${i}`), seededBytes(seed + i, [10, 3000, 90_000, 700_000][i % 4]!));
  });
  try {
    // Budget 0: every written byte is in a spool file, so almost every file takes the scan.
    const ov = t.open('main', 0);
    const want = new Map<string, Buffer>();
    for (let i = 0; i < 400; i++) {
      // New files and replacements of stored ones (rsync's way), across several batches of 128,
      // around the small-file threshold and past the 1 MiB a batch reads whole.
      const replaced = i < 60 && rand(2) === 0;
      const name = replaced ? `old${i}` : `new${i}`;
      const size = [0, 1, 4000, SMALL_FILE_THRESHOLD - 1, SMALL_FILE_THRESHOLD, 200_000, 1_048_576, 1_300_000][rand(8)]!;
      let data = replaced && size > 1000 ? Buffer.concat([seededBytes(seed + i, size).subarray(0, size >> 1), seededBytes(seed * 7 + i, size - (size >> 1))]) : seededBytes(seed * 13 + i, size);
      const { serial, fh } = ov.create(1, b(`.${name}.tmp`), 0o644);
      for (let o = 0; o < data.length; o += 128 * 1024) ov.write(fh, data.subarray(o, Math.min(data.length, o + 128 * 1024)), o);
      if (rand(10) === 0) {
        // Extended past what was written: the spool file is shorter than the content.
        ov.ftruncate(fh, data.length + 5000);
        data = Buffer.concat([data, Buffer.alloc(5000)]);
      }
      ov.release(fh);
      ov.rename(1, b(`.${name}.tmp`), 1, b(name));
      assert.ok(serial > 0);
      want.set(name, data);
    }
    // A file of several MiB, past what a batch reads whole: streamed, a few pieces read ahead.
    const big = seededBytes(seed * 17, 4_500_000 + rand(100_000));
    const { fh } = ov.create(1, b('big'), 0o644);
    for (let o = 0; o < big.length; o += 1 << 20) ov.write(fh, big.subarray(o, Math.min(big.length, o + (1 << 20))), o);
    ov.release(fh);
    want.set('big', big);
    const c = ov.commitSync();
    assert.equal(c.outcome, 'Created', `seed ${seed}`);
    if (c.outcome !== 'Created') return;
    const view = t.store.view(c.rootId);
    for (const [name, data] of want) {
      const ino = view.resolve([b(name)], name).inode;
      const expected = data.length === 0 ? null : data.length < SMALL_FILE_THRESHOLD ? idOf(ObjectKind.Blob, data) : buildExtentTree(chunkAndHash(data).map((k) => ({ id: Buffer.from(k.id), length: k.length })), (node) => idOf(ObjectKind.Extents, node));
      assert.equal(ino.size, data.length, `${name}, seed ${seed}`);
      assert.equal(ino.content?.toString('hex') ?? null, expected?.toString('hex') ?? null, `${name}: the content an import stores, seed ${seed}`);
      assert.ok(view.readFile(view.resolve([b(name)], name).inode).equals(data), `${name}: its bytes, seed ${seed}`);
    }
    assert.equal(t.client.verify().ok, true);
    ov.dispose();
  } finally {
    t.close();
  }
});
