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
    assert.equal(rootId.toString('hex'), '55b6976e5e6349e256cf73548a8503a7b24ba21ff7dbca6eb4a12333e31a8bd6');
    const stack = Buffer.alloc(16, 7);
    const layer = layerId(stack, null, rootId);
    assert.equal(layer.toString('hex'), '56e596980a3095610dfbbbc68a795fcd3c9ccd20559a37c31670b89855cb42ab');
    assert.equal(commitId(rootId, null, layer).toString('hex'), '3799a67bf479fbd8e156d117e5b0809a1e8faf41f6e82c56ada99a71b07b0e97');
    const view = store.view(rootId);
    assert.equal(view.readFile(view.resolve([Buffer.from('hello')], 'hello').inode).toString(), 'hello, layerfs\n');
  } finally {
    store.close();
  }
});
