/**
 * A Store on a tiny file system (a tmpfs the test mounts as root) runs out of space mid-import
 * and mid-commit: a typed ERR_NO_SPACE, the Store still valid, no partial state; after space is
 * freed the same operation succeeds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

test('ERR_NO_SPACE mid-import and mid-commit leaves the Store valid; retry succeeds after freeing space', async () => {
  const dir = tempDir();
  const mnt = join(dir, 'tiny');
  mkdirSync(mnt);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m', 'tmpfs', mnt]);
  try {
    const src = join(dir, 'src');
    mkdirSync(src);
    for (let i = 0; i < 40; i++) writeFileSync(join(src, `r${i}.bin`), seededBytes(i + 1, 256 * 1024));
    const small = join(dir, 'small');
    mkdirSync(small);
    writeFileSync(join(small, 'a'), 'a');
    const store = join(mnt, 's.sqlite');
    const c = Client.create(store);
    try {
      const base = await c.initLayerStack({ name: 'small', source: small });
      // The Workspace (and its marker under <store>.d, on the small file system) is made first.
      c.forkBranch({ name: 'b', layer: base.layer.id });
      const ws = await c.createWorkspace('b', { at: join(dir, 'ws') });
      await assert.rejects(c.initLayerStack({ name: 'big', source: src }), { code: 'ERR_NO_SPACE' });
      assert.deepEqual(c.layerStacks().map((s) => s.name), ['small']);
      assertIntact(c);

      for (let i = 0; i < 30; i++) writeFileSync(join(ws.path, `n${i}.bin`), seededBytes(100 + i, 256 * 1024));
      await assert.rejects(c.commitWorkspace(ws.id), { code: 'ERR_NO_SPACE' });
      assert.deepEqual(c.log('b'), []);
      assertIntact(c);

      execFileSync('mount', ['-o', 'remount,size=64m', mnt]);
      assert.equal((await c.initLayerStack({ name: 'big', source: src })).outcome, 'Created');
      assert.equal((await c.commitWorkspace(ws.id)).outcome, 'Created');
      assertIntact(c);
    } finally {
      c.close();
    }
  } finally {
    execFileSync('umount', ['-l', mnt]);
  }
});
