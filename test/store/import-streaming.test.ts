import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, linkSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { buildNamespace, CHUNK_PACK_TARGET, importTree, InodeKind, SMALL_FILE_THRESHOLD, Store, type Inode } from '../../lib/store/index.js';
import { storeContent, storeFileContent } from '../../lib/store/import/content.js';
import { chunkAndHash, scanPathsOrThrow } from '../../lib/native/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

async function importInto(store: Store, src: string): Promise<Buffer> {
  return store.write(async (w) => (await importTree(src, w, store.pages, { forbidden: store.files })).rootId);
}

/** Everything a state says, to compare two states. */
function listing(store: Store, rootId: Buffer): string[] {
  const view = store.view(rootId);
  const out: string[] = [];
  for (const [serial, inode] of view.inodes()) {
    const { xattrs: _x, content: _c, ...rest } = inode;
    out.push(`${serial} ${JSON.stringify(rest, (_k, v) => (typeof v === 'bigint' ? String(v) : Buffer.isBuffer(v) ? v.toString('hex') : v))}`);
    if (inode.kind === InodeKind.Dir) for (const e of view.readdir(inode)) out.push(`  ${e.name.toString('hex')} -> ${e.serial}`);
    if (inode.kind === InodeKind.File) out.push(`  content ${view.readFile(inode).toString('base64').length}`);
  }
  return out;
}

test('large files are streamed into chunk rows of about CHUNK_PACK_TARGET and read back exactly', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const big = seededBytes(5, 9 * 1024 * 1024 + 321);
  const mid = seededBytes(6, 700_000);
  writeFileSync(join(src, 'big'), big);
  writeFileSync(join(src, 'mid'), mid);
  writeFileSync(join(src, 'zeros'), Buffer.alloc(3 * 1024 * 1024));
  const store = Store.create(join(dir, 's.db'));
  try {
    const rootId = await importInto(store, src);
    const view = store.view(rootId);
    for (const [name, bytes] of [['big', big], ['mid', mid], ['zeros', Buffer.alloc(3 * 1024 * 1024)]] as const) {
      assert.ok(view.readFile(view.resolve([Buffer.from(name)], name).inode).equals(bytes), name);
    }
    // Chunk rows of about 1 MiB (a file's last one shorter); the zeros file (all chunks equal)
    // stored its one chunk once.
    const rows = (store.db.prepare('SELECT length(data) AS n FROM packs WHERE id IN (SELECT pack FROM objects WHERE kind = 2)').all() as { n: number }[]).map((r) => r.n);
    assert.ok(rows.every((n) => n <= 1.5 * CHUNK_PACK_TARGET), JSON.stringify(rows));
    assert.equal(rows.filter((n) => n < 0.5 * CHUNK_PACK_TARGET).length, 2, JSON.stringify(rows));
    assert.equal(rows.length, Math.ceil(big.length / CHUNK_PACK_TARGET) + 2);
    const chunks = store.db.prepare('SELECT count(*) AS n FROM objects WHERE kind = 2').get() as { n: number };
    assert.equal(chunks.n, chunkAndHash(big).length + chunkAndHash(mid).length + 1);
  } finally {
    store.close();
  }
});

test('re-importing an edited large file reuses every unchanged chunk', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const bytes = seededBytes(7, 6 * 1024 * 1024);
  writeFileSync(join(src, 'f'), bytes);
  const store = Store.create(join(dir, 's.db'));
  try {
    await importInto(store, src);
    const edited = Buffer.concat([bytes.subarray(0, 3_000_000), Buffer.from('an insertion in the middle'), bytes.subarray(3_000_000)]);
    writeFileSync(join(src, 'f'), edited);
    let stats = { objectsInserted: 0, objectsReused: 0 };
    const rootId = await store.write(async (w) => {
      const r = await importTree(src, w, store.pages, { forbidden: store.files });
      stats = { ...w.stats };
      return r.rootId;
    });
    const view = store.view(rootId);
    assert.ok(view.readFile(view.resolve([Buffer.from('f')], 'f').inode).equals(edited));
    // Content-defined cuts: only the chunks around the edit are new.
    assert.ok(stats.objectsReused > 250, JSON.stringify(stats));
    assert.ok(stats.objectsInserted < 20, JSON.stringify(stats));
  } finally {
    store.close();
  }
});

test('the streamed namespace equals buildNamespace over the same inodes (links, empty dirs, skipped sockets)', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'a/b/c'), { recursive: true });
  mkdirSync(join(src, 'empty'));
  mkdirSync(join(src, 'only-socket'));
  for (let i = 0; i < 300; i++) writeFileSync(join(src, 'a', `f${String(i).padStart(3, '0')}`), seededBytes(i + 10, (i * 97) % 3000));
  writeFileSync(join(src, 'a/b/c/deep'), 'deep');
  writeFileSync(join(src, 'x'), 'linked');
  linkSync(join(src, 'x'), join(src, 'a/b/x2'));
  linkSync(join(src, 'x'), join(src, 'a/b/x3'));
  // More than one batch's data budget of mid-size files: some are left to be read alone.
  for (let i = 0; i < 24; i++) writeFileSync(join(src, 'a/b', `m${i}`), seededBytes(100 + i, 900_000 + i));
  const server = createServer();
  await new Promise<void>((r) => server.listen(join(src, 'only-socket/s'), r));
  const store = Store.create(join(dir, 's.db'));
  try {
    const rootId = await importInto(store, src);
    // Rebuild the same state from its inodes and names with the reference builder.
    const view = store.view(rootId);
    const inodes = new Map<number, Inode>();
    const children = new Map<number, { name: Buffer; serial: number }[]>();
    for (const [serial, inode] of view.inodes()) {
      inodes.set(serial, { ...inode });
      if (inode.kind === InodeKind.Dir) {
        children.set(serial, [...view.readdir(inode)].map((e) => ({ name: e.name, serial: e.serial })));
        if (inode.content) inodes.get(serial)!.content = null;
      }
    }
    const again = await store.write((w) => buildNamespace(inodes, children, w, store.pages));
    assert.equal(again.toString('hex'), rootId.toString('hex'));
    const x = view.resolve([Buffer.from('x')], 'x');
    assert.equal(x.inode.nlink, 3);
    assert.deepEqual(listing(store, rootId).length > 600, true);
  } finally {
    server.close();
    store.close();
  }
});

test('a large file that changes while it is imported fails with ERR_FILE_CHANGED and stores nothing', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const f = join(src, 'growing');
  writeFileSync(f, seededBytes(8, 32 * 1024 * 1024));
  writeFileSync(join(src, 'small'), 'small');
  const store = Store.create(join(dir, 's.db'));
  try {
    await importInto(store, join(dir, 'src'));
    const counts = () => store.db.prepare('SELECT (SELECT count(*) FROM objects) AS objects, (SELECT count(*) FROM layer_stacks) AS layerStacks, (SELECT count(*) FROM layers) AS layers').get();
    const before = counts();
    const packs = store.db.prepare('SELECT count(*) AS n FROM packs').get();
    appendFileSync(f, 'x');
    const writer = spawn(process.execPath, ['-e', `const fs=require('fs');const end=Date.now()+4000;let n=0;while(Date.now()<end){fs.appendFileSync(${JSON.stringify(f)},'y'.repeat(4096));if(n++===0)console.log('go');}`]);
    const exited = new Promise((r) => writer.on('exit', r));
    try {
      // Appending for the whole import: whenever the scan and the read happen, they disagree.
      await new Promise((r) => writer.stdout.once('data', r));
      await assert.rejects(importInto(store, src), (e: any) => e.code === 'ERR_FILE_CHANGED' && /growing/.test(e.details.path));
    } finally {
      writer.kill();
      await exited;
    }
    assert.deepEqual(counts(), before);
    assert.deepEqual(store.db.prepare('SELECT count(*) AS n FROM packs').get(), packs);
  } finally {
    store.close();
  }
});

test('storeContent and storeFileContent store a file the scan did not read exactly as a read one', async () => {
  const dir = tempDir();
  const small = join(dir, 'small');
  const large = join(dir, 'large');
  writeFileSync(small, seededBytes(9, 50_000));
  writeFileSync(large, seededBytes(10, 3 * 1024 * 1024 + 7));
  // A one-byte arena leaves both files unread: metadata only, as the import gets them.
  const unread = await scanPathsOrThrow([small, large], { dataArena: Buffer.alloc(1), digestOversize: false, smallFileThreshold: SMALL_FILE_THRESHOLD });
  const read = await scanPathsOrThrow([small, large], { smallFileThreshold: SMALL_FILE_THRESHOLD });
  assert.ok(unread.every((e) => !e.data && !e.digest));
  const store = Store.create(join(dir, 's.db'));
  try {
    await store.write(async (w) => {
      for (let i = 0; i < 2; i++) {
        const path = Buffer.from([small, large][i]!);
        const want = storeFileContent(read[i]!, path, w);
        assert.deepEqual(await storeContent(unread[i]!, path, w), want);
        assert.deepEqual(storeFileContent(unread[i]!, path, w), want);
      }
    });
    writeFileSync(small, 'changed since the scan');
    await assert.rejects(store.write((w) => storeContent(unread[0]!, Buffer.from(small), w)), { code: 'ERR_FILE_CHANGED' });
    await assert.rejects(store.write(async (w) => storeFileContent(unread[0]!, Buffer.from(small), w)), { code: 'ERR_FILE_CHANGED' });
  } finally {
    store.close();
  }
});
