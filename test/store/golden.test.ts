import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Store, buildNamespace, ContentForm, InodeKind, ObjectKind, idOf, type Inode } from '../../lib/store/index.js';
import { layerId, commitId } from '../../lib/history/index.js';
import { tempDir } from '../helpers/tmp.js';
import { join } from 'node:path';

const dir = (over: Partial<Inode> = {}): Inode => ({ kind: InodeKind.Dir, mode: 0o755, uid: 0, gid: 0, mtimeNs: 1_700_000_000_000_000_000n, size: 0, nlink: 1, form: ContentForm.None, content: null, xattrs: [], ...over });

// Golden ids: if one of these changes, the on-disk format changed: bump FORMAT_VERSION and
// record it in docs/FORMAT.md.
test('golden ids for a fixed small tree', async () => {
  const store = Store.create(join(tempDir(), 's.db'));
  try {
    const blob = Buffer.from('hello, layerfs\n');
    assert.equal(idOf(ObjectKind.Blob, blob).toString('hex'), 'beadfd9a6067e847733751d779112764bb5f4a99da83a7bfc01958128fbdd523');
    const rootId = await store.write((w) => {
      w.put(ObjectKind.Blob, idOf(ObjectKind.Blob, blob), blob);
      const file: Inode = { kind: InodeKind.File, mode: 0o640, uid: 1000, gid: 1000, mtimeNs: 1_700_000_000_123_456_789n, size: blob.length, nlink: 1, form: ContentForm.Whole, content: idOf(ObjectKind.Blob, blob), xattrs: [{ name: Buffer.from('user.k'), value: Buffer.from('v') }] };
      const link: Inode = { kind: InodeKind.Symlink, mode: 0o777, uid: 0, gid: 0, mtimeNs: 0n, size: 5, nlink: 1, form: ContentForm.None, content: null, target: Buffer.from('hello'), xattrs: [] };
      return buildNamespace(
        new Map([
          [1, dir()],
          [2, file],
          [3, link],
          [4, dir({ mode: 0o750 })],
        ]),
        new Map([
          [1, [{ name: Buffer.from('hello'), serial: 2 }, { name: Buffer.from('link'), serial: 3 }, { name: Buffer.from('sub'), serial: 4 }]],
          [4, []],
        ]),
        w,
        store.pages,
      );
    });
    assert.equal(rootId.toString('hex'), '712a42a73cb3b23d3b766d897d5f1f8370a4e3e0f4580ff0b9e92c77c4dc3d96');
    const stack = Buffer.alloc(16, 7);
    const layer = layerId(stack, null, rootId);
    assert.equal(layer.toString('hex'), '0346b51cf5437dbfb5d915101ce0b15c75402139f5d416f3c80bb7bdd9a7384f');
    assert.equal(commitId(rootId, null, layer).toString('hex'), '13b9825412443d7ee7887dc32c5066e4d9e6fe591f1ff7eed59356cd7df4ecf9');
    const view = store.view(rootId);
    assert.equal(view.readFile(view.resolve([Buffer.from('hello')], 'hello').inode).toString(), 'hello, layerfs\n');
  } finally {
    store.close();
  }
});
