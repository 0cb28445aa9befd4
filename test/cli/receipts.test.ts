import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { Client } from '../../lib/sdk/index.js';
import { ObjectKind, Store } from '../../lib/store/index.js';

const PHASES = ['walkRead', 'chunkHash', 'write', 'publish'];

function assertPhases(r: { ms: number; phases: Record<string, number> }): void {
  assert.deepEqual(Object.keys(r.phases).sort(), [...PHASES].sort());
  for (const p of PHASES) assert.ok(r.phases[p]! >= 0, `${p} = ${r.phases[p]}`);
  const sum = PHASES.reduce((a, p) => a + r.phases[p]!, 0);
  assert.ok(Math.abs(sum - r.ms) < 0.01, `phases add up to ${sum}, ms ${r.ms}`);
}

test('import and commit receipts split wall time by phase; monitor snapshot sums them', async () => {
  const dir = tempDir();
  const store = join(dir, 's.sqlite');
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let i = 0; i < 10; i++) writeFileSync(join(src, `f${i}`), seededBytes(i + 1, 3_000));
  writeFileSync(join(src, 'large'), seededBytes(99, 3 << 20));
  const c = Client.create(store);
  const init = await c.initLayerStack({ name: 'p', source: src });
  assertPhases(init);
  assert.ok(init.allocatedGrowth >= 3 << 20, `allocated growth ${init.allocatedGrowth}`);
  c.forkBranch({ name: 'b', layer: init.layer.id });
  const ws = await c.createWorkspace('b', { at: join(dir, 'ws') });
  writeFileSync(join(ws.path, 'f0'), 'changed');
  const commit = await c.commitWorkspace(ws.id);
  assert.equal(commit.outcome, 'Created');
  assertPhases(commit);
  assertIntact(c);
  c.close();

  const snap = cli(['--json', '--store', store, 'monitor', 'snapshot']);
  assert.equal(snap.code, 0, snap.stderr);
  const ops = Object.fromEntries(snap.json.operations.map((o: any) => [o.operation, o]));
  for (const op of ['layerstack.init', 'workspace.commit']) assert.deepEqual(Object.keys(ops[op].phasesMs).sort(), [...PHASES].sort());
  const text = cli(['--store', store, 'monitor', 'snapshot']);
  assert.match(text.stdout, /workspace\.commit.*phases walkRead [\d.]+ ms/);
});

test("allocatedGrowth counts only the operation's own write transaction, not another writer's", async () => {
  const dir = tempDir();
  const path = join(dir, 's.sqlite');
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let i = 0; i < 5; i++) writeFileSync(join(src, `f${i}`), seededBytes(i + 1, 2_000));
  const c = Client.create(path);
  const init = await c.initLayerStack({ name: 'p', source: src });
  c.forkBranch({ name: 'b', layer: init.layer.id });
  const ws = await c.createWorkspace('b', { at: join(dir, 'ws') });
  writeFileSync(join(ws.path, 'f1'), 'a small edit');
  // The commit yields while it walks the Workspace; another connection stores 4 MiB meanwhile.
  const pending = c.commitWorkspace(ws.id);
  const other = Store.open(path);
  await other.write((w) => {
    w.add(ObjectKind.Blob, seededBytes(7, 4 << 20));
  });
  other.close();
  const r = await pending;
  assert.equal(r.outcome, 'Created');
  assert.ok(r.allocatedGrowth < 1 << 20, `the commit of a 12-byte edit reports ${r.allocatedGrowth} allocated bytes`);
  assertIntact(c);
  c.close();
});
