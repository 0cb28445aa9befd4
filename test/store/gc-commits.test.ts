/**
 * `db gc` removes the Commit rows nothing keeps (the Commits of deleted Branches) and keeps the
 * rows a live history walks, fork bases, pins, a Layer's source Commit and their ancestors; the
 * tombstone of a deleted Branch still says when it was deleted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { cli } from '../helpers/cli.js';

/** Commits `n` rounds on `branch`, each adding a file; their ids, oldest first. */
async function commits(c: Client, branch: string, ws: string, n: number, seed: number): Promise<string[]> {
  await c.createWorkspace(branch, { at: ws });
  const ids: string[] = [];
  for (let r = 0; r < n; r++) {
    writeFileSync(join(ws, `${branch}-${r}.bin`), seededBytes(seed * 100 + r, 20_000));
    const res = await c.commitWorkspace(ws);
    assert.equal(res.outcome, 'Created');
    if (res.outcome === 'Created') ids.push(res.commit.id);
  }
  assert.equal((await c.endWorkspace(ws)).outcome, 'Ended');
  return ids;
}

function commitRows(path: string): string[] {
  const s = Store.open(path, { readonly: true });
  try {
    return (s.db.prepare('SELECT id FROM commits').pluck().all() as Buffer[]).map((b) => b.toString('hex')).sort();
  } finally {
    s.close();
  }
}

test('gc removes the Commit rows of deleted Branches; fork bases, pins, Add sources and their ancestors stay; log of a deleted Branch says when', async () => {
  const dir = tempDir();
  const path = join(dir, 's.sqlite');
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'base\n');
  const c = Client.create(path);
  try {
    const init = await c.initLayerStack({ name: 'demo', source: src });
    const branch = async (name: string, n: number, seed: number) => {
      c.forkBranch({ name, layer: init.layer.id });
      return commits(c, name, join(dir, `ws-${name}`), n, seed);
    };
    const a = await branch('a', 3, 1);
    // `f` forks from a's second Commit: a[0] and a[1] are in its history.
    c.forkBranch({ name: 'f', branch: 'a', commit: a[1]! });
    const p = await branch('p', 3, 2);
    c.pin(p[1]!);
    const s = await branch('s', 2, 3);
    assert.equal(c.add('s').outcome, 'Added');
    const gone = await branch('gone', 2, 4);
    const keep = await branch('keep', 1, 5);
    const deleted = new Map<string, string>();
    for (const name of ['a', 'p', 's', 'gone']) {
      const d = await c.deleteBranch(name);
      assert.equal(d.outcome, 'Deleted');
      if (d.outcome === 'Deleted') deleted.set(name, d.deletedAt);
    }
    const removed = [a[2]!, p[2]!, ...gone];
    const before = commitRows(path);

    const dry = await c.gc({ dryRun: true });
    assert.equal(dry.commitsRemoved, removed.length);
    assert.deepEqual(commitRows(path), before);

    const r = await c.gc({ batchObjects: 2 });
    assert.equal(r.commitsRemoved, removed.length);
    assert.deepEqual(commitRows(path), before.filter((id) => !removed.includes(id)));
    assert.deepEqual(commitRows(path), [a[0]!, a[1]!, p[0]!, p[1]!, s[0]!, s[1]!, keep[0]!].sort());
    for (const [name, when] of deleted) {
      assert.throws(() => c.log(name), (e: unknown) => isLayerFsError(e, 'ERR_DELETED') && e.details.deletedAt === when && /was deleted at/.test(e.message), name);
    }
    for (const id of removed) {
      assert.throws(() => c.ls(id), (e: unknown) => isLayerFsError(e, 'ERR_NOT_FOUND'), id);
      assert.throws(() => c.pin(`commit:${id}`), (e: unknown) => isLayerFsError(e), id);
    }
    assert.deepEqual(c.log('f').map((x) => x.id), [a[1]!, a[0]!]);
    assert.ok(c.ls(p[1]!).some((e) => e.name === 'p-1.bin'));
    assert.ok(c.ls('keep').some((e) => e.name === 'keep-0.bin'));
    assertIntact(c);
    assert.equal((await c.gc()).commitsRemoved, 0);

    // Unpinned, p[1] and its parent go at the next gc.
    c.unpin(`commit:${p[1]}`);
    const out = cli(['--json', '--store', path, 'db', 'gc']);
    assert.equal(out.code, 0, out.stderr);
    assert.equal((out.json as { commitsRemoved: number }).commitsRemoved, 2);
    assert.deepEqual(commitRows(path), [a[0]!, a[1]!, s[0]!, s[1]!, keep[0]!].sort());
    assertIntact(c);
  } finally {
    c.close();
  }
});
