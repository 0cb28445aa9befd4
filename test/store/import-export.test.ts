import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, chmodSync, linkSync, lstatSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { Client } from '../../lib/sdk/index.js';
import { setXattr } from '../../lib/native/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { walkForCompare } from '../helpers/treewalk.js';
import { assertIntact } from '../helpers/integrity.js';

/** A tree with every kind of thing import must record exactly. */
async function richTree(root: string): Promise<{ socket: string; close: () => void }> {
  mkdirSync(join(root, 'src/deep/er'), { recursive: true });
  mkdirSync(join(root, 'empty-dir'));
  writeFileSync(join(root, 'empty-file'), '');
  writeFileSync(join(root, 'src/small.txt'), 'small text\n'.repeat(10));
  writeFileSync(join(root, 'src/edge-127k.bin'), seededBytes(1, 128 * 1024 - 1));
  writeFileSync(join(root, 'src/edge-128k.bin'), seededBytes(2, 128 * 1024));
  writeFileSync(join(root, 'src/deep/er/large.bin'), seededBytes(3, 3 * 1024 * 1024 + 17));
  writeFileSync(join(root, 'src/deep/er/huge.bin'), seededBytes(4, 9 * 1024 * 1024 + 5));
  symlinkSync('small.txt', join(root, 'src/link-rel'));
  symlinkSync('/etc/passwd', join(root, 'abs-link'));
  symlinkSync('dangling/nowhere', join(root, 'dangling'));
  linkSync(join(root, 'src/small.txt'), join(root, 'hard-1'));
  linkSync(join(root, 'src/small.txt'), join(root, 'src/deep/hard-2'));
  execFileSync('mkfifo', [join(root, 'fifo')]);
  const odd = Buffer.concat([Buffer.from(root + '/'), Buffer.from([0x6e, 0xff, 0xfe, 0x2e, 0x74])]);
  writeFileSync(odd, 'not utf-8 name');
  writeFileSync(join(root, 'setuid'), '#!/bin/sh\n');
  chmodSync(join(root, 'setuid'), 0o4755);
  mkdirSync(join(root, 'sticky'));
  chmodSync(join(root, 'sticky'), 0o1777);
  writeFileSync(join(root, 'owned'), 'owned by someone else');
  chownSync(join(root, 'owned'), 1234, 5678);
  chmodSync(join(root, 'src/small.txt'), 0o640);
  setXattr(join(root, 'src/small.txt'), 'user.origin', 'test');
  setXattr(join(root, 'empty-dir'), 'user.empty', Buffer.alloc(0));
  setXattr(join(root, 'src'), 'user.bin', Buffer.from([0, 1, 2, 255]));
  const socket = join(root, 'sock');
  const server = createServer();
  await new Promise<void>((r) => server.listen(socket, r));
  return { socket, close: () => server.close() };
}

test('import then export reproduces the tree exactly', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const { socket, close } = await richTree(src);
  const client = Client.create(join(dir, 'store.sqlite'));
  try {
    const r = await client.initLayerStack({ name: 'rich', source: src });
    assert.equal(r.outcome, 'Created');
    assert.deepEqual(r.skipped, [socket]);
    assert.equal(r.hardLinks, 2);
    assert.equal(r.specials, 1);
    const out = join(dir, 'out');
    const e = client.export('rich', out);
    assert.equal(e.hardLinks, 2);
    close();
    execFileSync('rm', ['-f', socket]);
    // Removing the socket touched the source root's mtime after the import, so that one field
    // is compared against the stored state instead.
    const want = walkForCompare(src, { dirMtimes: true });
    want[0]!.mtimeNs = client.stat('rich').mtimeNs.toString();
    assert.deepEqual(walkForCompare(out, { dirMtimes: true }), want);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('ls, stat and cat read any path of a state; bad paths get typed errors', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'a/b'), { recursive: true });
  writeFileSync(join(src, 'a/b/c.txt'), 'content of c');
  writeFileSync(join(src, 'big'), seededBytes(9, 500_000));
  const client = Client.create(join(dir, 'store.sqlite'));
  try {
    const r = await client.initLayerStack({ name: 'p', source: src });
    assert.deepEqual(client.ls('p').map((e) => [e.name, e.kind]), [['a', 'dir'], ['big', 'file']]);
    assert.deepEqual(client.ls(r.layer.id.slice(0, 8), 'a/b').map((e) => e.name), ['c.txt']);
    assert.equal(client.cat('p', 'a/b/c.txt').toString(), 'content of c');
    assert.ok(client.cat('p', 'big').equals(seededBytes(9, 500_000)));
    assert.equal(client.stat('p', 'a/b/c.txt').size, 12);
    assert.throws(() => client.cat('p', 'a/missing'), { code: 'ERR_NOT_FOUND' });
    assert.throws(() => client.cat('p', '../etc/passwd'), { code: 'ERR_UNSAFE_PATH' });
    assert.throws(() => client.ls('p', '/a'), { code: 'ERR_UNSAFE_PATH' });
    assert.throws(() => client.ls('ffff0000'), { code: 'ERR_NOT_FOUND' });
    assert.throws(() => client.ls('p', 'a/b/c.txt/x'), { code: 'ERR_NOT_A_DIRECTORY' });
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('importing the same tree twice stores nothing new and gives the same root', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let i = 0; i < 300; i++) writeFileSync(join(src, `f${i}`), seededBytes(i + 1, 100 + i * 37));
  writeFileSync(join(src, 'large'), seededBytes(77, 1 << 20));
  const client = Client.create(join(dir, 'store.sqlite'));
  try {
    const a = await client.initLayerStack({ name: 'one', source: src });
    const b = await client.initLayerStack({ name: 'two', source: src });
    assert.equal(a.layer.rootId, b.layer.rootId);
    assert.equal(b.objectsInserted, 0);
    assert.ok(b.objectsReused > 300);
    assertIntact(client);
  } finally {
    client.close();
  }
});

test('a hard-linked symlink and fifo export as hard links', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  const client = Client.create(join(dir, 'store.sqlite'));
  try {
    await client.initLayerStack({ name: 'p', source: src });
    client.forkBranch({ name: 'b', layer: 'p' });
    const ws = await client.createWorkspace('b', { at: join(dir, 'ws') });
    // A Workspace commit keeps every name of an inode of any kind (import links files only).
    symlinkSync('nowhere', join(dir, 'ws/link'));
    linkSync(join(dir, 'ws/link'), join(dir, 'ws/d/link-2'));
    execFileSync('mkfifo', [join(dir, 'ws/fifo')]);
    linkSync(join(dir, 'ws/fifo'), join(dir, 'ws/d/fifo-2'));
    assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
    const out = join(dir, 'out');
    assert.equal(client.export('b', out).hardLinks, 2);
    assert.deepEqual(walkForCompare(out, { dirMtimes: true }), walkForCompare(join(dir, 'ws'), { dirMtimes: true }));
    assert.equal(lstatSync(join(out, 'd/link-2')).ino, lstatSync(join(out, 'link')).ino);
    assert.equal(lstatSync(join(out, 'd/fifo-2')).ino, lstatSync(join(out, 'fifo')).ino);
    await client.endWorkspace(ws.id);
    assertIntact(client);
  } finally {
    client.close();
  }
});
