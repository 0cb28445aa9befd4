/**
 * Tree groups are assembled into rows of their own during a large write (a cold page read
 * loads a small row), while a small transaction still writes one row; every object reads back
 * and verify passes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client } from '../../lib/sdk/index.js';
import { ObjectKind } from '../../lib/store/index.js';
import { TREE_ROW_TARGET } from '../../lib/store/schema.js';
import { tempDir } from '../helpers/tmp.js';
import { assertStoreIntact } from '../helpers/integrity.js';

test('an import writes pages to tree rows of about TREE_ROW_TARGET; a small commit writes one row', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  for (let i = 0; i < 4000; i++) {
    mkdirSync(join(src, `d${i % 40}`), { recursive: true });
    writeFileSync(join(src, `d${i % 40}`, `f${i}.txt`), `line ${i} of a file that compresses ${'x'.repeat(i % 300)}\n`);
  }
  const path = join(dir, 's.sqlite');
  const c = Client.create(path);
  try {
    const init = await c.initLayerStack({ name: 'x', source: src });
    const packsOf = () => {
      const db = new Database(path, { readonly: true });
      try {
        return db.prepare('SELECT pack, group_concat(DISTINCT kind) AS kinds, (SELECT length(data) FROM packs WHERE id = pack) AS bytes FROM objects GROUP BY pack').all() as { pack: number; kinds: string; bytes: number }[];
      } finally {
        db.close();
      }
    };
    const rows = packsOf();
    const tree = new Set([ObjectKind.Page, ObjectKind.Root, ObjectKind.Extents]);
    const treeOnly = rows.filter((r) => r.kinds.split(',').every((k) => tree.has(Number(k))));
    assert.ok(treeOnly.length >= 2, `tree rows: ${JSON.stringify(rows)}`);
    for (const r of treeOnly) assert.ok(r.bytes <= 2 * TREE_ROW_TARGET, `tree row of ${r.bytes} bytes`);
    // A Workspace commit of one edit: its blob, pages and root share one new row.
    c.forkBranch({ name: 'b', layer: init.layer.id });
    const ws = await c.createWorkspace('b', { at: join(dir, 'ws') });
    writeFileSync(join(ws.path, 'd7', 'f7.txt'), 'an edit that is new content\n');
    assert.equal((await c.commitWorkspace(ws.id)).outcome, 'Created');
    const last = Math.max(...rows.map((r) => r.pack));
    const added = packsOf().filter((r) => r.pack > last);
    assert.equal(added.length, 1, JSON.stringify(added));
    assert.ok(added[0]!.kinds.split(',').map(Number).includes(ObjectKind.Page));
    assert.equal(c.cat('b', 'd7/f7.txt').toString(), 'an edit that is new content\n');
  } finally {
    c.close();
  }
  assertStoreIntact(path);
});
