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
    assert.equal(rootId.toString('hex'), '6ce71003a370a7f94c668d512251bb6e125b98d33fea37909b6e6da2177b64d6');
    const stack = Buffer.alloc(16, 7);
    const layer = layerId(stack, null, rootId);
    assert.equal(layer.toString('hex'), '4058a55f7695f37636f09669d0fee3c48d2adfcff61f019dd24f28391245e287');
    assert.equal(commitId(rootId, null, layer).toString('hex'), 'c7401398b737a4b3e4d609459071d33328a2fffe71651c4ce02e241551dfce09');
    const view = store.view(rootId);
    assert.equal(view.readFile(view.resolve([Buffer.from('hello')], 'hello').inode).toString(), 'hello, layerfs\n');
  } finally {
    store.close();
  }
});
