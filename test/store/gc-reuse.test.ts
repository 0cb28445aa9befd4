/**
 * A writer that finds a garbage object stored while gc sweeps, and publishes it, keeps an object
 * that can be read: gc deletes no object before the garbage stored against it (a delta before
 * its base), so a delta found between two sweep transactions still has its base. Before, the
 * sweep went in id order: with the base's id first, a Commit in between reused the delta and
 * verify found its base missing from the Store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { Codec } from '../../lib/store/codec.js';
import { idOf, ObjectKind } from '../../lib/store/object-id.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { walkForCompare } from '../helpers/treewalk.js';
import { commitVersions, demoStore, pausedGc } from '../helpers/gc-race.js';

/** A text file and a one-line edit of it, the original's id sorting first (the order gc swept in). */
function versions(): { before: Buffer; after: Buffer } {
  for (let seed = 0; ; seed++) {
    const text = Array.from({ length: 1500 }, (_, i) => `line ${i} of a source file, variant ${seed}\n`).join('');
    const before = Buffer.from(text);
    const after = Buffer.from(text.replace('line 700 ', 'LINE 700 '));
    if (Buffer.compare(idOf(ObjectKind.Blob, before), idOf(ObjectKind.Blob, after)) < 0) return { before, after };
  }
}

test('a Commit that reuses a garbage delta while gc sweeps keeps a readable object: bases outlive their deltas', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const { before, after } = versions();
  const [baseId, deltaId] = [idOf(ObjectKind.Blob, before), idOf(ObjectKind.Blob, after)];
  const { path, c, layer } = await demoStore(dir);
  try {
    // A Branch whose second Commit stores the edit as a delta against the first version; then it is deleted.
    await commitVersions(c, dir, 'attempt', layer, [{ 'g.txt': before }, { 'g.txt': after }]);
    const s = Store.open(path, { readonly: true });
    const row = s.db.prepare('SELECT codec, base FROM objects WHERE id = ?').get(deltaId) as { codec: number; base: Buffer };
    s.close();
    assert.equal(row.codec, Codec.Delta, 'the edit is stored as a delta');
    assert.ok(row.base.equals(baseId), 'against the first version');
    await c.deleteBranch('attempt', { force: true });

    // gc stops after its first transaction that deleted either version; a Commit then stores the edit again.
    c.forkBranch({ name: 'retry', layer });
    const ws = join(dir, 'ws');
    await c.createWorkspace('retry', { at: ws });
    const gc = await pausedGc(path, dir, [baseId, deltaId]);
    let tree;
    try {
      writeFileSync(join(ws, 'g.txt'), after);
      tree = walkForCompare(ws);
      assert.equal((await c.commitWorkspace(ws)).outcome, 'Created');
      gc.resume();
      assert.equal(await gc.exited, 0);
    } finally {
      gc.child.kill('SIGKILL');
    }
    await c.endWorkspace(ws);

    // Read back by another process's connection (no cache of this one's writes), and verified.
    const fresh = Client.connect(path, { readonly: true });
    try {
      const target = join(dir, 'export');
      fresh.export('retry', target);
      assert.deepEqual(walkForCompare(target), tree);
    } finally {
      fresh.close();
    }
    assertStoreIntact(path);
  } finally {
    c.close();
  }
});
