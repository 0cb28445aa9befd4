/**
 * `db gc` running again and again while four other processes commit, import, read, and create
 * and delete Branches whose content the committers and importers reuse: afterwards every state
 * they published exports exactly, no reader saw wrong bytes or an error, and verify passes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '../../lib/sdk/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { walkForCompare, type WalkRecord } from '../helpers/treewalk.js';
import { pool } from './gc-pool.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const run = promisify(execFile);
const worker = fileURLToPath(new URL('./gc-load-worker.ts', import.meta.url));
const gcWorker = fileURLToPath(new URL('../store/gc-worker.ts', import.meta.url));

test('four processes commit, import, churn and read while gc runs repeatedly: every published state exports exactly', { timeout: 600_000 }, async () => {
  const dir = tempDir();
  const store = join(dir, 's.sqlite');
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let k = 0; k < 12; k++) writeFileSync(join(src, `p${k}.bin`), pool(k));
  const c = Client.create(store);
  await c.initLayerStack({ name: 'main', source: src });
  c.forkBranch({ name: 'keep', layer: 'main' });
  c.close();
  const stop = join(dir, 'stop');
  let gcOut = '';
  const gc = new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, nodeArgs(gcWorker, store, '16', 'loop', stop), { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stdout.on('data', (d: Buffer) => (gcOut += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`gc worker exited ${code}: ${err}`))));
  });
  const roles = ['commit', 'churn', 'import', 'read'];
  const outs = await Promise.all(
    roles.map((role) => {
      const d = join(dir, role);
      mkdirSync(d);
      return run(process.execPath, nodeArgs(worker, store, role, d, role === 'read' ? '60' : '14'), { maxBuffer: 64 << 20 });
    }),
  );
  writeFileSync(stop, '');
  await gc;
  const results = outs.map((o) => JSON.parse(o.stdout) as { published: { id: string; tree: WalkRecord[] }[]; errors: string[] });
  roles.forEach((role, i) => assert.deepEqual(results[i]!.errors, [], role));
  const rounds = gcOut.split('\n').filter((l) => l.startsWith('round '));
  const deleted = rounds.reduce((n, l) => n + Number(l.split(' ')[2]), 0);
  console.log(`gc rounds ${rounds.length}, objects deleted ${deleted}, rescued ${rounds.reduce((n, l) => n + Number(l.split(' ')[3]), 0)}`);
  assert.ok(rounds.length >= 3, `gc ran ${rounds.length} times`);
  assert.ok(deleted > 0, 'gc deleted the churned Branches’ objects');
  const after = Client.connect(store);
  try {
    const published = [...results[0]!.published, ...results[2]!.published];
    assert.equal(published.length, 28);
    for (const p of published) {
      const target = join(dir, `export-${p.id.slice(0, 12)}`);
      after.export(p.id, target);
      assert.deepEqual(walkForCompare(target), p.tree, p.id);
    }
    await after.gc();
    for (const p of published.slice(-4)) {
      const target = join(dir, `export2-${p.id.slice(0, 12)}`);
      after.export(p.id, target);
      assert.deepEqual(walkForCompare(target), p.tree, p.id);
    }
    assertIntact(after);
  } finally {
    after.close();
  }
});
