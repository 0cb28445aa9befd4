import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Store } from '../../lib/store/store.js';
import { idOf, ObjectKind } from '../../lib/store/objects.js';
import { Client } from '../../lib/sdk/index.js';
import { BASES_AHEAD_LIMIT } from '../../lib/workspace/record.js';
import { rng } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

const missing = (e: unknown) => e instanceof Error && 'code' in e && e.code === 'ERR_CORRUPT' && /missing/.test(e.message);

test('remembered objects are read from memory, by kind, until forgotten; verify reads the file', async () => {
  const store = Store.create(join(tempDir(), 's.layerfs'));
  try {
    const data = Buffer.from('remembered page bytes');
    const id = idOf(ObjectKind.Page, data);
    assert.throws(() => store.objects.get(id, ObjectKind.Page), missing);
    store.objects.remember(id, ObjectKind.Page, data);
    assert.deepEqual(store.objects.get(id, ObjectKind.Page), data);
    assert.deepEqual(store.objects.get(id), data);
    // Another kind asked for: not the remembered object, read from the file (and missing there).
    assert.throws(() => store.objects.get(id, ObjectKind.Blob), missing);
    store.objects.forgetRemembered();
    assert.throws(() => store.objects.get(id, ObjectKind.Page), missing);
    // A rollback forgets them too.
    store.objects.remember(id, ObjectKind.Page, data);
    await assert.rejects(store.write(() => Promise.reject(new Error('rolled back'))), /rolled back/);
    assert.throws(() => store.objects.get(id, ObjectKind.Page), missing);
    // Bounded: 4 MiB of 256 KiB objects at most (the oldest go first).
    const ids: Buffer[] = [];
    for (let i = 0; i < 20; i++) {
      const d = Buffer.alloc(256 * 1024, i);
      ids.push(idOf(ObjectKind.Blob, d));
      store.objects.remember(ids[i]!, ObjectKind.Blob, d);
    }
    assert.throws(() => store.objects.get(ids[0]!, ObjectKind.Blob), missing);
    assert.equal(store.objects.get(ids[19]!, ObjectKind.Blob)[0], 19);
    // Too large to keep at all.
    const big = Buffer.alloc(1024 * 1024, 7);
    store.objects.remember(idOf(ObjectKind.Blob, big), ObjectKind.Blob, big);
    assert.throws(() => store.objects.get(idOf(ObjectKind.Blob, big), ObjectKind.Blob), missing);
  } finally {
    store.close();
  }
});

test('small commits in a row (pages and delta bases from memory) store exactly what the Workspace holds', async () => {
  const seed = Number(process.env.SEED ?? 1 + Math.floor(Math.random() * 1e6));
  console.log(`seed ${seed}`);
  const r = rng(seed);
  const dir = tempDir();
  const src = join(dir, 'src');
  const files: string[] = [];
  for (let d = 0; d < 4; d++) {
    mkdirSync(join(src, `d${d}`), { recursive: true });
    for (let f = 0; f < 50; f++) {
      const rel = `d${d}/f${f}.txt`;
      files.push(rel);
      writeFileSync(join(src, rel), `file ${rel}\n`.repeat(20 + Math.floor(r() * 200)));
    }
  }
  const storePath = join(dir, 's.layerfs');
  const c = Client.create(storePath);
  try {
    const init = await c.initLayerStack({ name: 'p', source: src });
    c.forkBranch({ name: 'b', layer: init.layer.id });
    const ws = await c.createWorkspace('b', { at: join(dir, 'ws') });
    for (let round = 0; round < 12; round++) {
      // A few files edited again and again (their bases are the last commit's blobs), some new ones.
      const n = round === 11 ? BASES_AHEAD_LIMIT + 4 : 1 + Math.floor(r() * 8);
      for (let k = 0; k < n; k++) {
        const rel = round === 11 ? `new/${k}.txt` : files[Math.floor(r() * 12)]!;
        mkdirSync(join(ws.path, rel, '..'), { recursive: true });
        writeFileSync(join(ws.path, rel), `${readFileSync(join(src, files[k % files.length]!), 'utf8')}round ${round} edit ${k}\n`);
      }
      const res = await c.commitWorkspace(ws.id);
      assert.equal(res.outcome, 'Created', `seed ${seed}, round ${round}`);
      const status = await c.workspaceStatus(ws.id);
      assert.ok(status.clean, `seed ${seed}, round ${round}: ${JSON.stringify(status.changes.slice(0, 3))}`);
    }
    // A fresh handle (nothing in memory) reads every committed file back exactly.
    const fresh = Client.connect(storePath);
    try {
      for (const rel of files.slice(0, 12)) assert.deepEqual(fresh.cat('b', rel), readFileSync(join(ws.path, rel)), `seed ${seed}: ${rel}`);
      assertIntact(fresh);
    } finally {
      await fresh.close();
    }
    assertIntact(c);
  } finally {
    await c.close();
  }
});
