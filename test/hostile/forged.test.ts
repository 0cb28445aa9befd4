// Forged Stores (issue: hostile input and shared machines, items 7-11): states written through
// the project's own encoders and as raw bytes the encoders would refuse, handed to ls, cat,
// export and verify. Each is a typed error (never a stack trace, never bytes past the recorded
// size, never a directory reached twice), export leaves nothing behind, and verify names each
// violation with the states that reach it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, truncateSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, LayerFsError } from '../../lib/sdk/index.js';
import { listXattrs, makeNode } from '../../lib/native/index.js';
import { forgedStore, Forge, ContentForm, InodeKind, ObjectKind, TreeKind, plainStore } from '../helpers/forge.js';
import { encodeSerial } from '../../lib/store/tree/inode.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

function code(c: string) {
  return (e: unknown) => e instanceof LayerFsError && e.code === c;
}

/** Opens the forged Store, runs fn, closes. */
function withClient<T>(storePath: string, fn: (c: Client) => T): T {
  const c = Client.connect(storePath);
  try {
    return fn(c);
  } finally {
    c.close();
  }
}

/** verify is not ok, and some violation mentions `what` and names the Layer's state. */
function assertVerifyFinds(c: Client, what: RegExp): void {
  const r = c.verify();
  assert.equal(r.ok, false, `verify called the forgery ok`);
  const hit = r.damaged.find((d) => what.test(d.message));
  assert.ok(hit, `no violation matching ${what}: ${JSON.stringify(r.damaged.map((d) => d.message))}`);
  assert.ok(hit.states.some((s) => s.startsWith('layer:')), `the violation names no state: ${JSON.stringify(hit)}`);
}

/** export fails with `errCode` and leaves no partial tree behind. */
function assertExportFails(c: Client, dir: string, errCode: string): void {
  const target = join(dir, `out-${Math.random().toString(36).slice(2)}`);
  assert.throws(() => c.export('main', target), code(errCode));
  assert.equal(existsSync(target), false, 'export left a partial tree');
  const mine = join(dir, `mine-${Math.random().toString(36).slice(2)}`);
  mkdirSync(mine);
  assert.throws(() => c.export('main', mine), code(errCode));
  assert.deepEqual(readdirSync(mine), [], 'export left files in the directory the user made');
}

test('extent-tree bomb: a 10-byte file whose extents expand to 85 GB is ERR_CORRUPT for cat, range reads and export; verify names it', async () => {
  const { dir, storePath } = await forgedStore((f) => {
    const chunk = f.put(ObjectKind.Chunk, Buffer.from('0123456789'));
    let node = f.extentNode(0, Array(8).fill(chunk), Array(8).fill(10));
    let len = 80;
    for (let level = 1; level <= 10; level++) {
      node = f.extentNode(level, Array(8).fill(node), Array(8).fill(len));
      len *= 8;
    }
    return new Map([
      [1, f.directory([['bomb', 2]])],
      [2, f.inode({ kind: InodeKind.File, parents: [1], size: 10, form: ContentForm.Extents, content: node })],
    ]);
  });
  withClient(storePath, (c) => {
    const t0 = Date.now();
    assert.throws(() => c.cat('main', 'bomb'), code('ERR_CORRUPT'));
    assert.throws(() => c.cat('main', 'bomb', { offset: 0, length: 5 }), code('ERR_CORRUPT'));
    assertExportFails(c, dir, 'ERR_CORRUPT');
    assertVerifyFinds(c, /holds \d+ bytes where 10 are recorded/);
    assert.ok(Date.now() - t0 < 10_000, 'the bomb was expanded');
  });
});

test('size/content mismatch: a blob shorter or longer than the recorded size, a chunk of the wrong length, an empty extent', async () => {
  const { dir, storePath } = await forgedStore((f) => {
    const chunk = f.put(ObjectKind.Chunk, Buffer.from('abcdef'));
    const liar = f.extentNode(0, [chunk], [10]);
    const empty = f.extentNode(0, [chunk, chunk], [0, 6]);
    return new Map([
      [1, f.directory([['short', 2], ['long', 3], ['chunk', 4], ['zero', 5]])],
      [2, f.file(Buffer.from('12345'), [1], 10)],
      [3, f.file(Buffer.from('123456789012345'), [1], 10)],
      [4, f.inode({ kind: InodeKind.File, parents: [1], size: 10, form: ContentForm.Extents, content: liar })],
      [5, f.inode({ kind: InodeKind.File, parents: [1], size: 6, form: ContentForm.Extents, content: empty })],
    ]);
  });
  withClient(storePath, (c) => {
    for (const name of ['short', 'long', 'chunk', 'zero']) {
      assert.throws(() => c.cat('main', name), code('ERR_CORRUPT'), name);
    }
    assertExportFails(c, dir, 'ERR_CORRUPT');
    assertVerifyFinds(c, /blob [0-9a-f]+ has 5 bytes where 10 are recorded/);
    assertVerifyFinds(c, /blob [0-9a-f]+ has 15 bytes where 10 are recorded/);
    assertVerifyFinds(c, /chunk [0-9a-f]+ has 6 bytes where 10 are recorded/);
    assertVerifyFinds(c, /empty extent/);
  });
});

test('a directory that contains itself: export is ERR_CORRUPT at once (no 700 nested directories), verify names the cycle', async () => {
  const { dir, storePath } = await forgedStore((f) => new Map([
    [1, f.directory([['loop', 2]])],
    [2, f.directory([['again', 2]], [1])],
  ]));
  withClient(storePath, (c) => {
    assertExportFails(c, dir, 'ERR_CORRUPT');
    assertVerifyFinds(c, /directory inode 2 is reached a second time/);
  });
});

test('directory fan-out: five levels of 8 names all pointing at the next serial are ERR_CORRUPT, not 37,449 directories', async () => {
  const { dir, storePath } = await forgedStore((f) => {
    const m = new Map([[1, f.directory([['d', 2]])]]);
    for (let s = 2; s <= 6; s++) {
      const names: [string, number][] = s === 6 ? [] : Array.from({ length: 8 }, (_, i) => [`n${i}`, s + 1]);
      m.set(s, f.directory(names, [s - 1]));
    }
    return m;
  });
  withClient(storePath, (c) => {
    assertExportFails(c, dir, 'ERR_CORRUPT');
    assertVerifyFinds(c, /directory inode 4 is reached a second time/);
  });
});

test('a dangling serial: ls and export say ERR_CORRUPT, and so does verify', async () => {
  const { dir, storePath } = await forgedStore((f) => new Map([[1, f.directory([['ghost', 99]])]]));
  withClient(storePath, (c) => {
    assert.throws(() => c.ls('main', ''), code('ERR_CORRUPT'));
    assertExportFails(c, dir, 'ERR_CORRUPT');
    assertVerifyFinds(c, /inode 99, which is missing/);
  });
});

test('unsafe names (.., a/b, empty, NUL) are refused by export and each named by verify', async () => {
  const { dir, storePath } = await forgedStore((f) => {
    const names: [Buffer, number][] = [[Buffer.from('..'), 2], [Buffer.from('a/b'), 2], [Buffer.alloc(0), 2], [Buffer.from('x\0y'), 2], [Buffer.from('.'), 2]];
    return new Map([
      [1, f.directory(names)],
      [2, f.file(Buffer.from('hi'), [1, 1, 1, 1, 1])],
    ]);
  });
  withClient(storePath, (c) => {
    assertExportFails(c, dir, 'ERR_UNSAFE_PATH');
    const r = c.verify();
    assert.equal(r.ok, false);
    for (const shown of ['".."', '"a/b"', '""', '"x\\u0000y"', '"."']) assert.ok(r.damaged.some((d) => d.message.includes(`unsafe name ${shown}`)), `verify missed ${shown}: ${JSON.stringify(r.damaged.map((d) => d.message))}`);
  });
});
test('duplicate names across directory pages (raw pages the tree builder would never write): export ERR_CORRUPT, not EEXIST; verify names it', async () => {
  const { dir, storePath } = await forgedStore((f) => {
    const p1 = f.page(TreeKind.Directory, 0, [Buffer.from('a'), Buffer.from('dup')], [encodeSerial(2), encodeSerial(2)]);
    const p2 = f.page(TreeKind.Directory, 0, [Buffer.from('b'), Buffer.from('dup')], [encodeSerial(2), encodeSerial(3)]);
    const top = f.page(TreeKind.Directory, 1, [Buffer.from('a'), Buffer.from('b')], [p1, p2]);
    return new Map([
      [1, f.inode({ kind: InodeKind.Dir, form: ContentForm.Whole, content: top })],
      [2, f.file(Buffer.from('two'), [1, 1, 1])],
      [3, f.inode({ kind: InodeKind.Symlink, parents: [1], size: 11, target: Buffer.from('/etc/passwd') })],
    ]);
  });
  withClient(storePath, (c) => {
    assertExportFails(c, dir, 'ERR_CORRUPT');
    assertVerifyFinds(c, /repeats or is out of order across pages/);
  });
});

test('export applies only user. xattrs (a forged trusted.evil is not set); verify names it', async () => {
  const { dir, storePath } = await forgedStore((f) => {
    const file = f.file(Buffer.from('x'));
    file.xattrs = [{ name: Buffer.from('trusted.evil'), value: Buffer.from('1') }, { name: Buffer.from('user.ok'), value: Buffer.from('2') }];
    return new Map([[1, f.directory([['f', 2]])], [2, file]]);
  });
  withClient(storePath, (c) => {
    const out = join(dir, 'out');
    c.export('main', out);
    assert.deepEqual(listXattrs(join(out, 'f')).sort(), ['user.ok']);
    assertVerifyFinds(c, /xattr "trusted.evil" is outside the user. namespace/);
  });
});

test('raw bytes: truncated, oversized and malformed objects read as ERR_CORRUPT everywhere and verify reports them', async () => {
  const { dir, storePath } = await plainStore();
  const f = new Forge(storePath);
  try {
    const good = f.file(Buffer.from('ok'));
    const rawInode = Buffer.from([1, 0xa4, 0x03, 0, 0, 0, 2, 1, 1, 1]); // truncated before form
    const longCount = Buffer.from([2, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]); // a page claiming 4 G entries
    const bigPage = f.put(ObjectKind.Page, longCount);
    f.publish(
      f.state(
        new Map<number, ReturnType<Forge['inode']> | Buffer>([
          [1, f.inode({ kind: InodeKind.Dir, form: ContentForm.Whole, content: f.dir([['good', 2], ['bad', 3], ['sub', 4]]) })],
          [2, good],
          [3, rawInode],
          [4, f.inode({ kind: InodeKind.Dir, parents: [1], form: ContentForm.Whole, content: bigPage })],
        ]),
      ),
    );
  } finally {
    f.close();
  }
  withClient(storePath, (c) => {
    assert.equal(c.cat('main', 'good').toString(), 'ok');
    assert.throws(() => c.cat('main', 'bad'), code('ERR_CORRUPT'));
    assert.throws(() => c.ls('main', 'sub'), code('ERR_CORRUPT'));
    assertExportFails(c, dir, 'ERR_CORRUPT');
    assert.equal(c.verify().ok, false);
  });
});

test('verify of a Store truncated by one byte is a report (not ok), not "no transaction is active"', async () => {
  const { dir, storePath } = await plainStore();
  const src = join(dir, 'src2');
  mkdirSync(src);
  for (let i = 0; i < 200; i++) writeFileSync(join(src, `f${i}`), 'x'.repeat(i * 100));
  const c0 = Client.connect(storePath);
  await c0.initLayerStack({ name: 'more', source: src });
  c0.close();
  truncateSync(storePath, statSync(storePath).size - 1);
  const r = withClient(storePath, (c) => c.verify());
  assert.equal(r.ok, false);
  assert.ok(r.damaged.length > 0 || r.sqliteCheck !== 'ok');
});

test('a FIFO and a device with a non-UTF-8 name are imported and exported under their own bytes', async () => {
  const dir = tempDir('layerfs-hostile-');
  const src = join(dir, 'src');
  mkdirSync(src);
  const name = Buffer.from([0x70, 0xff]);
  assert.equal(makeNode(Buffer.concat([Buffer.from(`${src}/`), name]), 'p', 0o644), 0);
  assert.equal(makeNode(Buffer.concat([Buffer.from(`${src}/`), Buffer.from([0x63, 0xfe])]), 'c', 0o600, 1, 3), 0);
  writeFileSync(join(src, 'plain'), 'x');
  const c = Client.create(join(dir, 'store.sqlite'));
  try {
    const init = await c.initLayerStack({ name: 'p', source: src });
    c.forkBranch({ name: 'main', layer: init.layer.id });
    const out = join(dir, 'out');
    c.export('main', out);
    const names = readdirSync(out, { encoding: 'buffer' }).map((b) => b.toString('hex')).sort();
    assert.deepEqual(names, [Buffer.from([0x63, 0xfe]).toString('hex'), name.toString('hex'), Buffer.from('plain').toString('hex')].sort());
    assert.ok(statSync(Buffer.concat([Buffer.from(`${out}/`), name])).isFIFO());
    assert.ok(statSync(Buffer.concat([Buffer.from(`${out}/`), Buffer.from([0x63, 0xfe])])).isCharacterDevice());
    assertIntact(c);
  } finally {
    c.close();
  }
});

test('a 20,000-page chain of same-level pages (raw pages) is ERR_CORRUPT for ls, export, verify and analyze, with no stack overflow', async () => {
  const { dir, storePath } = await forgedStore((f) => {
    let next = f.page(TreeKind.Directory, 0, [Buffer.from('a')], [encodeSerial(2)]);
    for (let i = 0; i < 20_000; i++) next = f.page(TreeKind.Directory, 1, [Buffer.from('a')], [next]);
    return new Map([
      [1, f.inode({ kind: InodeKind.Dir, form: ContentForm.Whole, content: next })],
      [2, f.file(Buffer.from('x'))],
    ]);
  });
  withClient(storePath, (c) => {
    assert.throws(() => c.ls('main', ''), code('ERR_CORRUPT'));
    assertExportFails(c, dir, 'ERR_CORRUPT');
    const r = c.verify();
    assert.equal(r.ok, false);
    assert.ok(r.damaged.some((d) => /level 1 under a node of level 1|points at one of level 1/.test(d.message)), JSON.stringify(r.damaged.map((d) => d.message)));
    assert.throws(() => c.analyzeDedup(), code('ERR_CORRUPT'));
  });
});

test('diff to a state with a directory cycle or parents that loop ends (a result or ERR_CORRUPT), never an endless walk', { timeout: 30_000 }, async () => {
  for (const cyc of ['names', 'parents'] as const) {
    const { storePath } = await plainStore();
    const before = withClient(storePath, (c) => c.layers()[0]!.id);
    const f = new Forge(storePath);
    try {
      const table =
        cyc === 'names'
          ? new Map([
              [1, f.directory([['a.txt', 2], ['loop', 3]])],
              [2, f.file(Buffer.from('a\n'), [1])],
              [3, f.directory([['again', 3]], [1])],
            ])
          : new Map([
              [1, f.directory([['a.txt', 2]])],
              [2, f.file(Buffer.from('changed\n'), [1])],
              [3, f.directory([['x', 4]], [4])],
              [4, f.directory([['y', 3]], [3])],
              [5, f.file(Buffer.from('orphan'), [3])],
            ]);
      f.publish(f.state(table));
    } finally {
      f.close();
    }
    withClient(storePath, (c) => {
      try {
        c.diff(before, 'main');
      } catch (e) {
        assert.ok(code('ERR_CORRUPT')(e), String(e));
      }
    });
  }
});

test('an inode table key that is not 8 bytes (found by the read-path harness, seed 21): verify and analyze report it, no RangeError', async () => {
  const { storePath } = await plainStore();
  const f = new Forge(storePath);
  try {
    const { encodeInode } = await import('../../lib/store/index.js');
    const { serialKey } = await import('../../lib/store/tree/inode.js');
    const root = f.directory([['a', 2]]);
    const file = f.file(Buffer.from('x'));
    const table = f.page(TreeKind.Inodes, 0, [serialKey(1), serialKey(2), Buffer.from([0xff, 1, 2])], [encodeInode(root), encodeInode(file), encodeInode(file)]);
    const { encodeRoot } = await import('../../lib/store/tree/root.js');
    f.publish(f.put(ObjectKind.Root, encodeRoot({ inodes: table })));
  } finally {
    f.close();
  }
  withClient(storePath, (c) => {
    assertVerifyFinds(c, /inode table key of 3 bytes/);
    assert.throws(() => c.analyzeDedup(), code('ERR_CORRUPT'));
  });
});

test('an inner page whose key is not its child\'s first key (found by the read-path harness, seed 1): verify reports it, reads are ERR_CORRUPT', async () => {
  const { storePath } = await plainStore();
  const f = new Forge(storePath);
  try {
    const { encodeInode } = await import('../../lib/store/index.js');
    const { serialKey } = await import('../../lib/store/tree/inode.js');
    const { encodeRoot } = await import('../../lib/store/tree/root.js');
    const root = f.directory([['a', 2], ['b', 3]]);
    const leaf1 = f.page(TreeKind.Inodes, 0, [serialKey(1), serialKey(2)], [encodeInode(root), encodeInode(f.file(Buffer.from('x')))]);
    const leaf2 = f.page(TreeKind.Inodes, 0, [serialKey(3)], [encodeInode(f.file(Buffer.from('y')))]);
    // The second entry should be keyed 3 (its child's first key); 2 sends lookups of 2 astray.
    const top = f.page(TreeKind.Inodes, 1, [serialKey(1), serialKey(2)], [leaf1, leaf2]);
    f.publish(f.put(ObjectKind.Root, encodeRoot({ inodes: top })));
  } finally {
    f.close();
  }
  withClient(storePath, (c) => {
    assertVerifyFinds(c, /misnames the first key of its child/);
    assert.throws(() => c.cat('main', 'a'), code('ERR_CORRUPT'));
  });
});
