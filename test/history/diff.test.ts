import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, linkSync, mkdirSync, renameSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { buildNamespace, ContentForm, idOf, InodeKind, ObjectKind, Store, TreeKind, type Inode, type ObjectWriter } from '../../lib/store/index.js';
import { changedFields, diffStates, type DiffEntry } from '../../lib/history/diff.js';
import { diffTrees } from '../../lib/history/diff-trees.js';
import { setXattr } from '../../lib/native/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { rng } from '../helpers/random.js';

// ---------------------------------------------------------------------------------------------
// Helpers

/** One line per entry: `M path [fields]`, `R old -> new [fields]`. */
function summary(entries: DiffEntry[]): string[] {
  const letter = { added: 'A', deleted: 'D', modified: 'M', renamed: 'R' } as const;
  return entries.map((e) => {
    const p = e.change === 'renamed' ? `${e.oldPath} -> ${e.path}` : e.path;
    return e.fields.length > 0 ? `${letter[e.change]} ${p} [${e.fields.join(',')}]` : `${letter[e.change]} ${p}`;
  });
}

function fullDiff(store: Store, from: Buffer, to: Buffer): DiffEntry[] {
  const page = diffStates(store, from, to, { limit: 1_000_000 });
  assert.equal(page.next, undefined);
  assert.equal(page.entries.length, page.total);
  for (let i = 1; i < page.entries.length; i++) assert.ok(Buffer.compare(page.entries[i - 1]!.pathBytes, page.entries[i]!.pathBytes) < 0, 'sorted, unique paths');
  return page.entries;
}

/**
 * A Store whose states are imports of one source directory, edited in place between imports so
 * untouched files keep their mtimes.
 */
class Fixture {
  readonly dir = tempDir('layerfs-diff-');
  readonly src = join(this.dir, 'src');
  readonly storePath = join(this.dir, 'store.sqlite');
  private readonly client = Client.create(this.storePath);
  private n = 0;

  constructor() {
    mkdirSync(this.src);
  }

  path(rel: string): string {
    return join(this.src, rel);
  }

  write(rel: string, data: string | Buffer): void {
    mkdirSync(join(this.src, rel, '..'), { recursive: true });
    writeFileSync(this.path(rel), data);
    // A fixed mtime, so only what a test changes on purpose differs.
    utimesSync(this.path(rel), 1_700_000_000, 1_700_000_000);
  }

  async snapshot(): Promise<Buffer> {
    const r = await this.client.initLayerStack({ name: `s${this.n++}`, source: this.src });
    return Buffer.from(r.layer.rootId, 'hex');
  }

  /** Closes the SDK handle and opens the Store for diffing. */
  open(): Store {
    this.client.close();
    return Store.open(this.storePath);
  }
}

// ---------------------------------------------------------------------------------------------
// States imported through the SDK

test('added, deleted and modified files; directory mtime alone is not a change', async () => {
  const f = new Fixture();
  f.write('a.txt', 'alpha\n');
  f.write('b.txt', 'bravo\n');
  f.write('sub/c.txt', 'charlie\n');
  f.write('sub/e.txt', 'echo\n');
  const s1 = await f.snapshot();
  f.write('a.txt', 'alpha, edited\n');
  unlinkSync(f.path('b.txt'));
  f.write('sub/d.txt', 'delta, new\n');
  const s2 = await f.snapshot();
  const store = f.open();
  try {
    const entries = fullDiff(store, s1, s2);
    assert.deepEqual(summary(entries), ['M a.txt [content]', 'D b.txt', 'A sub/d.txt']);
    const a = entries[0]!;
    assert.equal(a.kind, 'file');
    assert.equal(a.size, 'alpha, edited\n'.length);
    assert.equal(a.oldSize, 'alpha\n'.length);
    assert.equal(entries[1]!.size, 'bravo\n'.length);
    assert.equal(entries[1]!.oldSize, undefined);
    // And backwards.
    assert.deepEqual(summary(fullDiff(store, s2, s1)), ['M a.txt [content]', 'A b.txt', 'D sub/d.txt']);
  } finally {
    store.close();
  }
});

test('identical roots give an empty page without loading anything', async () => {
  const f = new Fixture();
  f.write('x', 'x');
  const s1 = await f.snapshot();
  const s2 = await f.snapshot();
  assert.ok(s1.equals(s2), 'same tree, same root id');
  const store = f.open();
  try {
    let loads = 0;
    const load = store.pages.load.bind(store.pages);
    store.pages.load = (kind, id) => (loads++, load(kind, id));
    assert.deepEqual(diffStates(store, s1, s2), { entries: [], total: 0 });
    assert.equal(loads, 0);
  } finally {
    store.close();
  }
});

test('chmod, chown, mtime, xattrs and symlink retarget', async () => {
  const f = new Fixture();
  f.write('mode.sh', '#!/bin/sh\n');
  f.write('owned', 'owned');
  f.write('touched', 'touched');
  symlinkSync('mode.sh', f.path('link'));
  mkdirSync(f.path('dir'));
  f.write('dir/inner', 'inner');
  const s1 = await f.snapshot();
  chmodSync(f.path('mode.sh'), 0o755);
  chownSync(f.path('owned'), 1234, 5678);
  utimesSync(f.path('touched'), 1_800_000_000, 1_800_000_000);
  unlinkSync(f.path('link'));
  symlinkSync('owned', f.path('link'));
  chmodSync(f.path('dir'), 0o700);
  setXattr(f.path('dir/inner'), 'user.tag', 'v1');
  const s2 = await f.snapshot();
  const store = f.open();
  try {
    const entries = fullDiff(store, s1, s2);
    const byPath = new Map(entries.map((e) => [e.path, e]));
    assert.deepEqual([...byPath.keys()], ['dir', 'dir/inner', 'link', 'mode.sh', 'owned', 'touched']);
    assert.deepEqual(byPath.get('dir/inner')!.fields, ['xattrs']);
    assert.deepEqual(byPath.get('dir')!.fields, ['mode']);
    assert.equal(byPath.get('dir')!.kind, 'dir');
    assert.equal(byPath.get('dir')!.size, undefined);
    assert.deepEqual(byPath.get('mode.sh')!.fields, ['mode']);
    assert.deepEqual(byPath.get('owned')!.fields, ['owner']);
    assert.deepEqual(byPath.get('touched')!.fields, ['mtime']);
    const link = byPath.get('link')!;
    assert.equal(link.change, 'modified');
    assert.equal(link.kind, 'symlink');
    assert.ok(link.fields.includes('target'), String(link.fields));
    assert.ok(!link.fields.includes('content'));
    assert.equal(link.size, 'owned'.length);
    assert.equal(link.oldSize, 'mode.sh'.length);
    for (const e of entries) assert.equal(e.change, 'modified');
  } finally {
    store.close();
  }
});

test('a file that becomes a directory: kind change plus the new contents', async () => {
  const f = new Fixture();
  f.write('k', 'was a file');
  f.write('z.txt', 'after k in walk order');
  const s1 = await f.snapshot();
  unlinkSync(f.path('k'));
  f.write('k/inner.txt', 'now a directory');
  const s2 = await f.snapshot();
  const store = f.open();
  try {
    const entries = fullDiff(store, s1, s2);
    assert.deepEqual(
      entries.map((e) => [e.change, e.path, e.kind]),
      [
        ['modified', 'k', 'dir'],
        ['added', 'k/inner.txt', 'file'],
      ],
    );
    assert.ok(entries[0]!.fields.includes('kind'));
    assert.ok(!entries[0]!.fields.includes('content'));
    assert.equal(entries[0]!.size, undefined);
    assert.equal(entries[0]!.oldSize, 'was a file'.length);
    const back = fullDiff(store, s2, s1);
    assert.deepEqual(
      back.map((e) => [e.change, e.path, e.kind]),
      [
        ['modified', 'k', 'file'],
        ['deleted', 'k/inner.txt', 'file'],
      ],
    );
  } finally {
    store.close();
  }
});

test('renames across separate imports are found by content, within and across directories', async () => {
  const f = new Fixture();
  f.write('d/a.txt', 'moves within d');
  f.write('d/m.txt', 'stays');
  f.write('d1/x.txt', 'moves to d2');
  f.write('d2/p.txt', 'stays in d2');
  f.write('same1', 'identical twin');
  f.write('same2', 'identical twin');
  f.write('empty', '');
  const s1 = await f.snapshot();
  renameSync(f.path('d/a.txt'), f.path('d/z.txt'));
  renameSync(f.path('d1/x.txt'), f.path('d2/x.txt'));
  // Two identical files moved into a directory: paired by basename, then path order.
  mkdirSync(f.path('twins'));
  renameSync(f.path('same2'), f.path('twins/same2'));
  renameSync(f.path('same1'), f.path('twins/same1'));
  // Empty files have no content id: a moved empty file is a delete and an add.
  renameSync(f.path('empty'), f.path('empty2'));
  chmodSync(f.path('d2/x.txt'), 0o600);
  const s2 = await f.snapshot();
  const store = f.open();
  try {
    assert.deepEqual(summary(fullDiff(store, s1, s2)), [
      'R d/a.txt -> d/z.txt',
      'R d1/x.txt -> d2/x.txt [mode]',
      'D empty',
      'A empty2',
      'A twins',
      'R same1 -> twins/same1',
      'R same2 -> twins/same2',
    ]);
    const r = fullDiff(store, s1, s2)[0]!;
    assert.equal(r.oldPath, 'd/a.txt');
    assert.ok(r.oldPathBytes!.equals(Buffer.from('d/a.txt')));
  } finally {
    store.close();
  }
});

test('deleting a directory lists it and everything under it; adding one likewise', async () => {
  const f = new Fixture();
  f.write('keep', 'keep');
  f.write('big/x', 'x');
  f.write('big/y', 'y');
  f.write('big/sub/z', 'z');
  mkdirSync(f.path('big/sub/empty'));
  symlinkSync('../x', f.path('big/sub/l'));
  const s1 = await f.snapshot();
  rmSync(f.path('big'), { recursive: true });
  f.write('fresh/a/b/c', 'new content');
  const s2 = await f.snapshot();
  const store = f.open();
  try {
    assert.deepEqual(summary(fullDiff(store, s1, s2)), [
      'D big',
      'D big/sub',
      'D big/sub/empty',
      'D big/sub/l',
      'D big/sub/z',
      'D big/x',
      'D big/y',
      'A fresh',
      'A fresh/a',
      'A fresh/a/b',
      'A fresh/a/b/c',
    ]);
  } finally {
    store.close();
  }
});

test('hard links: a new name is added, the existing names show links', async () => {
  const f = new Fixture();
  f.write('orig', 'shared inode');
  f.write('sub/other', 'other');
  const s1 = await f.snapshot();
  linkSync(f.path('orig'), f.path('sub/zlink'));
  const s2 = await f.snapshot();
  const store = f.open();
  try {
    assert.deepEqual(summary(fullDiff(store, s1, s2)), ['M orig [links]', 'A sub/zlink']);
    assert.deepEqual(summary(fullDiff(store, s2, s1)), ['M orig [links]', 'D sub/zlink']);
  } finally {
    store.close();
  }
});

test('non-UTF-8 names keep their exact bytes', async () => {
  const f = new Fixture();
  const odd = Buffer.from([0x6e, 0xff, 0xfe, 0x2e, 0x74]);
  const oddDir = Buffer.from([0xc3, 0x28]);
  const p = Buffer.concat([Buffer.from(f.src + '/'), odd]);
  writeFileSync(p, 'one');
  const s1 = await f.snapshot();
  writeFileSync(p, 'two!');
  mkdirSync(Buffer.concat([Buffer.from(f.src + '/'), oddDir]));
  writeFileSync(Buffer.concat([Buffer.from(f.src + '/'), oddDir, Buffer.from('/'), odd]), 'nested');
  const s2 = await f.snapshot();
  const store = f.open();
  try {
    const entries = fullDiff(store, s1, s2);
    assert.equal(entries.length, 3);
    const [m, d, n] = entries as [DiffEntry, DiffEntry, DiffEntry];
    assert.equal(m.change, 'modified');
    assert.ok(m.pathBytes.equals(odd));
    assert.equal(m.path, odd.toString('utf8'));
    assert.ok(m.path.includes('\ufffd'));
    assert.equal(d.change, 'added');
    assert.ok(d.pathBytes.equals(oddDir));
    assert.equal(n.change, 'added');
    assert.ok(n.pathBytes.equals(Buffer.concat([oddDir, Buffer.from('/'), odd])));
  } finally {
    store.close();
  }
});

test('paging with a cursor over 2,500 changes', async () => {
  const f = new Fixture();
  f.write('base', 'base');
  const s1 = await f.snapshot();
  for (let d = 0; d < 25; d++) for (let i = 0; i < 99; i++) f.write(`d${d}/f${i}`, seededBytes(d * 1000 + i + 1, 24));
  const s2 = await f.snapshot();
  const store = f.open();
  try {
    const all = fullDiff(store, s1, s2);
    assert.equal(all.length, 25 * 100);
    const seen: DiffEntry[] = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const page = diffStates(store, s1, s2, { after, limit: 1000 });
      pages++;
      assert.equal(page.total, 2500);
      seen.push(...page.entries);
      if (!page.next) break;
      assert.equal(page.entries.length, 1000);
      after = page.next;
    }
    assert.equal(pages, 3);
    assert.deepEqual(
      seen.map((e) => e.path),
      all.map((e) => e.path),
    );
    // The default page size is 1000, and a cursor past the end gives an empty last page.
    const first = diffStates(store, s1, s2);
    assert.equal(first.entries.length, 1000);
    const tail = diffStates(store, s1, s2, { after: diffStates(store, s1, s2, { after: first.next!, limit: 1499 }).next!, limit: 5 });
    assert.deepEqual(
      tail.entries.map((e) => e.path),
      [all[2499]!.path],
    );
    assert.equal(tail.next, undefined);
    assert.throws(() => diffStates(store, s1, s2, { after: 'nonsense' }), { code: 'ERR_INVALID_ARGUMENT' });
    assert.throws(() => diffStates(store, s1, s2, { limit: 0 }), { code: 'ERR_INVALID_ARGUMENT' });
  } finally {
    store.close();
  }
});

test('cost: modifying 3 files of 20,000 loads a small fraction of the pages', async () => {
  const f = new Fixture();
  for (let d = 0; d < 100; d++) {
    mkdirSync(f.path(`dir${d}`));
    for (let i = 0; i < 200; i++) f.write(`dir${d}/file${i}.txt`, seededBytes(d * 1000 + i + 1, 16));
  }
  const s1 = await f.snapshot();
  f.write('dir3/file7.txt', 'changed 1');
  f.write('dir50/file199.txt', 'changed 2');
  f.write('dir99/file0.txt', 'changed 3');
  const s2 = await f.snapshot();
  const store = f.open();
  try {
    const pagesInStore = (store.db.prepare('SELECT count(*) AS n FROM objects WHERE kind = ?').get(ObjectKind.Page) as { n: number }).n;
    let loads = 0;
    const load = store.pages.load.bind(store.pages);
    store.pages.load = (kind, id) => (loads++, load(kind, id));
    const entries = fullDiff(store, s1, s2);
    assert.deepEqual(summary(entries), ['M dir3/file7.txt [content]', 'M dir50/file199.txt [content]', 'M dir99/file0.txt [content]']);
    assert.ok(pagesInStore > 600, `the tree has ${pagesInStore} pages`);
    assert.ok(loads < pagesInStore / 10, `diff loaded ${loads} pages of ${pagesInStore}`);
  } finally {
    store.close();
  }
});

// ---------------------------------------------------------------------------------------------
// States built with the store API: serials follow inodes across states

interface Spec {
  /** serial → record (parents and directory contents are filled by buildNamespace) */
  inodes: [number, Inode][];
  /** directory serial → its names */
  dirs: [number, [string, number][]][];
}

function fileInode(w: ObjectWriter, text: string, over: Partial<Inode> = {}): Inode {
  const data = Buffer.from(text);
  const id = idOf(ObjectKind.Blob, data);
  w.put(ObjectKind.Blob, id, data);
  return { kind: InodeKind.File, mode: 0o644, uid: 0, gid: 0, mtimeNs: 1_000n, size: data.length, nlink: 1, form: data.length ? ContentForm.Whole : ContentForm.None, content: data.length ? id : null, xattrs: [], ...over };
}

function dirInode(over: Partial<Inode> = {}): Inode {
  return { kind: InodeKind.Dir, mode: 0o755, uid: 0, gid: 0, mtimeNs: 1_000n, size: 0, nlink: 1, form: ContentForm.None, content: null, xattrs: [], ...over };
}

async function build(store: Store, spec: (w: ObjectWriter) => Spec): Promise<Buffer> {
  return store.write((w) => {
    const s = spec(w);
    const inodes = new Map(s.inodes);
    const children = new Map(s.dirs.map(([d, names]) => [d, names.map(([name, serial]) => ({ name: Buffer.from(name), serial }))]));
    for (const [serial, n] of inodes) if (n.kind === InodeKind.Dir && !children.has(serial)) children.set(serial, []);
    return buildNamespace(inodes, children, w, store.pages);
  });
}

test('serial-based renames: moved and edited files, renamed directories, a new inode at an old path', async () => {
  const store = Store.create(join(tempDir('layerfs-diff-'), 'store.sqlite'));
  try {
    const s1 = await build(store, (w) => ({
      inodes: [
        [1, dirInode()],
        [2, dirInode()],
        [3, fileInode(w, 'f content')],
        [4, fileInode(w, 'g content')],
        [6, fileInode(w, 'k content')],
        [7, fileInode(w, 'keep content')],
      ],
      dirs: [
        [
          1,
          [
            ['a', 2],
            ['g', 4],
            ['k', 6],
          ],
        ],
        [
          2,
          [
            ['f', 3],
            ['keep', 7],
          ],
        ],
      ],
    }));
    const s2 = await build(store, (w) => ({
      inodes: [
        [1, dirInode()],
        [2, dirInode({ mtimeNs: 2_000n })],
        [3, fileInode(w, 'f content, edited')],
        [4, fileInode(w, 'g content', { mode: 0o600 })],
        [5, dirInode()],
        [7, fileInode(w, 'keep content')],
        // A new inode replacing k (an editor's atomic save): a modified path, not a rename.
        [8, fileInode(w, 'k content, saved')],
      ],
      dirs: [
        [
          1,
          [
            ['b', 5],
            ['c', 2],
            ['h', 4],
            ['k', 8],
          ],
        ],
        [2, [['keep', 7]]],
        [5, [['f2', 3]]],
      ],
    }));
    const entries = fullDiff(store, s1, s2);
    assert.deepEqual(summary(entries), ['A b', 'R a/f -> b/f2 [content]', 'R a -> c', 'R a/keep -> c/keep', 'R g -> h [mode]', 'M k [content]']);
    const byPath = new Map(entries.map((e) => [e.path, e]));
    assert.equal(byPath.get('b/f2')!.serial, 3);
    assert.equal(byPath.get('c')!.kind, 'dir');
    assert.equal(byPath.get('k')!.serial, 8);
    // Backwards, the same moves in reverse.
    assert.deepEqual(summary(fullDiff(store, s2, s1)), ['R c -> a', 'R b/f2 -> a/f [content]', 'R c/keep -> a/keep', 'D b', 'R h -> g [mode]', 'M k [content]']);
  } finally {
    store.close();
  }
});

test('serial-based: swaps, a move over an existing file, hard links gaining and losing names', async () => {
  const store = Store.create(join(tempDir('layerfs-diff-'), 'store.sqlite'));
  try {
    const s1 = await build(store, (w) => ({
      inodes: [
        [1, dirInode()],
        [2, fileInode(w, 'x')],
        [3, fileInode(w, 'y')],
        [4, fileInode(w, 'target')],
        [5, fileInode(w, 'mover')],
        [6, fileInode(w, 'linked')],
        [7, dirInode()],
      ],
      dirs: [
        [
          1,
          [
            ['x', 2],
            ['y', 3],
            ['t', 4],
            ['m', 5],
            ['l1', 6],
            ['l2', 6],
            ['sub', 7],
          ],
        ],
        [7, [['l3', 6]]],
      ],
    }));
    const s2 = await build(store, (w) => ({
      inodes: [
        [1, dirInode()],
        [2, fileInode(w, 'x')],
        [3, fileInode(w, 'y')],
        [5, fileInode(w, 'mover')],
        [6, fileInode(w, 'linked')],
        [7, dirInode()],
      ],
      dirs: [
        [
          1,
          [
            ['x', 3],
            ['y', 2],
            // m moved over t: t's old inode is gone, the rename says it all.
            ['t', 5],
            ['l1', 6],
            ['l4', 6],
            ['sub', 7],
          ],
        ],
        // l2 and sub/l3 removed, l4 added: 3 names before, 2 after.
        [7, []],
      ],
    }));
    // Names of one inode pair up in path order: l2 -> l4; sub/l3 is left over. A swap keeps
    // both paths, so each is modified: a rename is only from a path that disappeared.
    assert.deepEqual(summary(fullDiff(store, s1, s2)), ['M l1 [links]', 'R l2 -> l4 [links]', 'D sub/l3', 'R m -> t', 'M x [content]', 'M y [content]']);
  } finally {
    store.close();
  }
});

// ---------------------------------------------------------------------------------------------
// Units

test('diffTrees skips equal pages and reports exactly the differing keys', async () => {
  const store = Store.create(join(tempDir('layerfs-diff-'), 'store.sqlite'));
  try {
    const names = (n: number, edit: (i: number) => string | null): [string, number][] => {
      const out: [string, number][] = [];
      for (let i = 0; i < n; i++) {
        const name = edit(i);
        if (name !== null) out.push([name, 100 + i]);
      }
      return out;
    };
    const spec = (list: [string, number][]) => (): Spec => ({
      inodes: [[1, dirInode()], ...list.map(([, s]): [number, Inode] => [s, { ...dirInode(), kind: InodeKind.Fifo }])],
      dirs: [[1, list]],
    });
    const a = names(5000, (i) => `n${String(i).padStart(5, '0')}`);
    const b = names(5000, (i) => (i === 10 ? null : i === 2500 ? 'n02500-renamed' : `n${String(i).padStart(5, '0')}`));
    const ra = await build(store, spec(a));
    const rb = await build(store, spec(b));
    const dirA = store.view(ra).inode(1).content;
    const dirB = store.view(rb).inode(1).content;
    let loads = 0;
    const load = store.pages.load.bind(store.pages);
    store.pages.load = (kind, id) => (loads++, load(kind, id));
    const changes = [...diffTrees(TreeKind.Directory, store.pages, dirA, dirB)].map((c) => [c.key.toString(), c.before !== undefined, c.after !== undefined]);
    assert.deepEqual(changes, [
      ['n00010', true, false],
      ['n02500', true, false],
      ['n02500-renamed', false, true],
    ]);
    assert.ok(loads < 20, `${loads} page loads for a 5,000-name directory`);
    assert.equal([...diffTrees(TreeKind.Directory, store.pages, null, dirA)].length, 5000);
    assert.equal([...diffTrees(TreeKind.Directory, store.pages, dirA, null)].length, 5000);
  } finally {
    store.close();
  }
});

test('changedFields: directory mtime alone is no change; kind change hides content', () => {
  const base: Inode = { kind: InodeKind.Dir, mode: 0o755, uid: 0, gid: 0, mtimeNs: 1n, size: 0, nlink: 1, parents: [1], form: ContentForm.None, content: null, xattrs: [] };
  assert.deepEqual(changedFields(base, { ...base, mtimeNs: 2n }), []);
  assert.deepEqual(changedFields(base, { ...base, mtimeNs: 2n, mode: 0o700 }), ['mode', 'mtime']);
  assert.deepEqual(changedFields(base, { ...base, xattrs: [{ name: Buffer.from('user.a'), value: Buffer.from('1') }] }), ['xattrs']);
  assert.deepEqual(changedFields(base, { ...base, kind: InodeKind.File, mode: 0o644, size: 3 }), ['kind', 'mode']);
  const file: Inode = { ...base, kind: InodeKind.File, mode: 0o644 };
  assert.deepEqual(changedFields(file, { ...file, parents: [1, 1] }), ['links']);
  assert.deepEqual(changedFields(file, { ...file, parents: [2] }), []);
  assert.deepEqual(changedFields(file, { ...file, uid: 5 }), ['owner']);
});

// ---------------------------------------------------------------------------------------------
// Randomized: the fast diff against a full walk of both states

interface Model {
  nodes: Map<number, { dir: boolean; text: string; mode: number }>;
  names: Map<number, Map<string, number>>;
  next: number;
}

function cloneModel(m: Model): Model {
  return { nodes: new Map([...m.nodes].map(([k, v]) => [k, { ...v }])), names: new Map([...m.names].map(([k, v]) => [k, new Map(v)])), next: m.next };
}

/** Every (dir, name, serial) binding of the model. */
function bindings(m: Model): [number, string, number][] {
  return [...m.names].flatMap(([d, names]) => [...names].map(([n, s]): [number, string, number] => [d, n, s]));
}

/** Removes inodes no longer named, recursively (a directory's contents go with it). */
function collect(m: Model): void {
  for (;;) {
    const named = new Set<number>([1]);
    for (const [, , s] of bindings(m)) named.add(s);
    const dead = [...m.nodes.keys()].filter((s) => !named.has(s));
    if (dead.length === 0) return;
    for (const s of dead) {
      m.nodes.delete(s);
      m.names.delete(s);
    }
  }
}

function isInside(m: Model, dir: number, ancestor: number): boolean {
  // Directories have one name: walk up through the bindings.
  const parentOf = new Map<number, number>();
  for (const [d, , s] of bindings(m)) if (m.nodes.get(s)!.dir) parentOf.set(s, d);
  for (let cur: number | undefined = dir; cur !== undefined; cur = parentOf.get(cur)) if (cur === ancestor) return true;
  return false;
}

function mutate(m: Model, r: () => number, steps: number): void {
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  const name = (): string => pick(['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  const dirs = (): number[] => [...m.nodes].filter(([, v]) => v.dir).map(([k]) => k);
  for (let i = 0; i < steps; i++) {
    const all = bindings(m);
    const op = Math.floor(r() * 8);
    if (op === 0 || all.length === 0) {
      // create
      const d = pick(dirs());
      const n = name();
      if (m.names.get(d)!.has(n)) continue;
      const s = ++m.next;
      const dir = r() < 0.3;
      m.nodes.set(s, { dir, text: `t${Math.floor(r() * 4)}`, mode: 0o644 });
      if (dir) m.names.set(s, new Map());
      m.names.get(d)!.set(n, s);
    } else if (op === 1) {
      // edit content
      const files = [...m.nodes].filter(([, v]) => !v.dir);
      if (files.length) pick(files)[1].text = `t${Math.floor(r() * 6)}`;
    } else if (op === 2) {
      const [, , s] = pick(all);
      m.nodes.get(s)!.mode = r() < 0.5 ? 0o600 : 0o644;
    } else if (op === 3) {
      // move / rename (overwriting a file target)
      const [d, n, s] = pick(all);
      const to = pick(dirs());
      if (m.nodes.get(s)!.dir && isInside(m, to, s)) continue;
      const nn = name();
      const existing = m.names.get(to)!.get(nn);
      if (existing !== undefined && (existing === s || m.nodes.get(existing)!.dir || m.nodes.get(s)!.dir)) continue;
      m.names.get(d)!.delete(n);
      m.names.get(to)!.set(nn, s);
      collect(m);
    } else if (op === 4) {
      const [d, n] = pick(all);
      m.names.get(d)!.delete(n);
      collect(m);
    } else if (op === 5) {
      // hard link
      const [, , s] = pick(all);
      const d = pick(dirs());
      const n = name();
      if (m.nodes.get(s)!.dir || m.names.get(d)!.has(n)) continue;
      m.names.get(d)!.set(n, s);
    } else if (op === 6) {
      // a new inode at an existing file path (atomic save)
      const [d, n, s] = pick(all);
      if (m.nodes.get(s)!.dir) continue;
      const t = ++m.next;
      m.nodes.set(t, { dir: false, text: r() < 0.5 ? m.nodes.get(s)!.text : `t${Math.floor(r() * 6)}`, mode: 0o644 });
      m.names.get(d)!.set(n, t);
      collect(m);
    } else {
      // swap two names in one directory
      const [d, n, s] = pick(all);
      const others = [...m.names.get(d)!].filter(([k]) => k !== n);
      if (!others.length) continue;
      const [n2, s2] = pick(others);
      m.names.get(d)!.set(n, s2);
      m.names.get(d)!.set(n2, s);
    }
  }
}

async function buildModel(store: Store, m: Model): Promise<Buffer> {
  return build(store, (w) => ({
    inodes: [...m.nodes].map(([s, v]): [number, Inode] => [s, v.dir ? dirInode({ mode: v.mode | 0o100 }) : fileInode(w, v.text, { mode: v.mode })]),
    dirs: [...m.names].map(([d, names]): [number, [string, number][]] => [d, [...names]]),
  }));
}

/** Full walk: path → serial and record. */
function walkAll(store: Store, root: Buffer): Map<string, { serial: number; inode: Inode }> {
  const view = store.view(root);
  const out = new Map<string, { serial: number; inode: Inode }>();
  const stack: [string, number][] = [['', 1]];
  while (stack.length) {
    const [p, s] = stack.pop()!;
    const inode = view.inode(s);
    out.set(p, { serial: s, inode });
    if (inode.kind === InodeKind.Dir) for (const e of view.readdir(inode)) stack.push([p === '' ? e.name.toString() : `${p}/${e.name.toString()}`, e.serial]);
  }
  return out;
}

test('randomized histories: every changed path is reported, nothing else is', async () => {
  const store = Store.create(join(tempDir('layerfs-diff-'), 'store.sqlite'));
  try {
    for (let round = 0; round < 60; round++) {
      const r = rng(round + 1);
      const base: Model = { nodes: new Map([[1, { dir: true, text: '', mode: 0o755 }]]), names: new Map([[1, new Map()]]), next: 1 };
      mutate(base, r, 40);
      const next = cloneModel(base);
      mutate(next, r, 1 + Math.floor(r() * 6));
      const s1 = await buildModel(store, base);
      const s2 = await buildModel(store, next);
      const a = walkAll(store, s1);
      const b = walkAll(store, s2);
      const changed = new Set<string>();
      const moved = new Set<string>();
      for (const [p, x] of a) {
        const y = b.get(p);
        if (!y || changedFields(x.inode, y.inode).length > 0) changed.add(p);
        else if (y.serial !== x.serial) moved.add(p);
      }
      for (const p of b.keys()) if (!a.has(p)) changed.add(p);
      const entries = fullDiff(store, s1, s2);
      const mentioned = new Set<string>();
      for (const e of entries) {
        mentioned.add(e.path);
        if (e.oldPath !== undefined) mentioned.add(e.oldPath);
        const x = a.get(e.oldPath ?? e.path);
        const y = b.get(e.path);
        switch (e.change) {
          case 'added':
            assert.ok(!x || x.serial !== y!.serial, `${round}: added ${e.path}`);
            assert.equal(e.serial, y!.serial);
            break;
          case 'deleted':
            assert.ok(!b.has(e.path) || b.get(e.path)!.serial !== a.get(e.path)!.serial, `${round}: deleted ${e.path}`);
            assert.equal(e.serial, x!.serial);
            break;
          case 'modified':
            assert.deepEqual(e.fields, changedFields(x!.inode, y!.inode));
            assert.ok(e.fields.length > 0);
            break;
          case 'renamed':
            // One history, so serials are trusted: a rename keeps its inode, or pairs equal content.
            assert.ok(x!.serial === y!.serial || (x!.inode.content !== null && x!.inode.content.equals(y!.inode.content ?? Buffer.alloc(0))), `${round}: renamed ${e.oldPath} -> ${e.path}`);
            assert.deepEqual(e.fields, changedFields(x!.inode, y!.inode));
            break;
        }
      }
      for (const p of changed) assert.ok(mentioned.has(p), `${round}: ${JSON.stringify(p)} changed but is not in the diff ${JSON.stringify(summary(entries))}`);
      for (const p of mentioned) assert.ok(changed.has(p) || moved.has(p), `${round}: ${JSON.stringify(p)} is in the diff but did not change`);
    }
  } finally {
    store.close();
  }
});
