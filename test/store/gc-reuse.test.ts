/**
 * A writer that finds a garbage object stored while gc sweeps, and publishes it, keeps an object
 * that can be read: gc deletes no object before the garbage stored against it (a delta before
 * its base), so a delta found between two sweep transactions still has its base. Before, the
 * sweep went in id order: with the base's id first, a Commit in between reused the delta and
 * verify found its base missing from the Store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { Store } from '../../lib/store/index.js';
import { Codec } from '../../lib/store/codec.js';
import { idOf, ObjectKind } from '../../lib/store/object-id.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { walkForCompare } from '../helpers/treewalk.js';

const worker = fileURLToPath(new URL('./gc-pause-worker.ts', import.meta.url));

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
  const path = join(dir, 's.sqlite');
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'base\n');
  const { before, after } = versions();
  const [baseId, deltaId] = [idOf(ObjectKind.Blob, before), idOf(ObjectKind.Blob, after)];
  const c = Client.create(path);
  try {
    const init = await c.initLayerStack({ name: 'demo', source: src });
    // A Branch whose second Commit stores the edit as a delta against the first version; then it is deleted.
    c.forkBranch({ name: 'attempt', layer: init.layer.id });
    const ws = join(dir, 'ws');
    await c.createWorkspace('attempt', { at: ws });
    for (const v of [before, after]) {
      writeFileSync(join(ws, 'g.txt'), v);
      assert.equal((await c.commitWorkspace(ws)).outcome, 'Created');
    }
    await c.endWorkspace(ws);
    const s = Store.open(path, { readonly: true });
    const row = s.db.prepare('SELECT codec, base FROM objects WHERE id = ?').get(deltaId) as { codec: number; base: Buffer };
    s.close();
    assert.equal(row.codec, Codec.Delta, 'the edit is stored as a delta');
    assert.ok(row.base.equals(baseId), 'against the first version');
    await c.deleteBranch('attempt', { force: true });

    // gc stops after its first transaction that deleted either version; a Commit then stores the edit again.
    c.forkBranch({ name: 'retry', layer: init.layer.id });
    const ws2 = join(dir, 'ws2');
    await c.createWorkspace('retry', { at: ws2 });
    const flag = join(dir, 'resume');
    const gc = spawn(process.execPath, nodeArgs(worker, path, `${baseId.toString('hex')},${deltaId.toString('hex')}`, flag), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    gc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((res) => gc.on('exit', res));
    await new Promise<void>((res, rej) => {
      gc.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('paused\n')) res();
      });
      void exited.then((code) => rej(new Error(`gc ended before pausing (${code}): ${out}${err}`)));
    });
    writeFileSync(join(ws2, 'g.txt'), after);
    const tree = walkForCompare(ws2);
    const res = await c.commitWorkspace(ws2);
    assert.equal(res.outcome, 'Created');
    writeFileSync(flag, '');
    assert.equal(await exited, 0, err);
    await c.endWorkspace(ws2);

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
