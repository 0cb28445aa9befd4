import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { Client } from '../../lib/sdk/index.js';

test('monitor snapshot and analyze-dedup report receipts and sharing between states', async () => {
  const dir = tempDir();
  const store = join(dir, 's.sqlite');
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let i = 0; i < 20; i++) writeFileSync(join(src, `f${i}`), seededBytes(i + 1, 10_000));
  writeFileSync(join(src, 'same-a'), seededBytes(500, 50_000));
  writeFileSync(join(src, 'same-b'), seededBytes(500, 50_000));
  const c = Client.create(store);
  const layer = (await c.initLayerStack({ name: 'p', source: src })).layer.id;
  c.forkBranch({ name: 'b', layer });
  const ws = await c.createWorkspace('b', { at: join(dir, 'ws') });
  writeFileSync(join(ws.path, 'f0'), 'small change');
  assert.equal((await c.commitWorkspace(ws.id)).outcome, 'Created');
  c.close();

  const snap = cli(['--json', '--store', store, 'monitor', 'snapshot']);
  assert.equal(snap.code, 0, snap.stderr);
  const ops = Object.fromEntries(snap.json.operations.map((o: any) => [o.operation, o]));
  assert.equal(ops['layerstack.init'].count, 1);
  assert.equal(ops['workspace.commit'].outcomes.Created, 1);
  assert.ok(ops['layerstack.init'].semanticGrowth >= 250_000);

  const a = cli(['--json', '--store', store, 'monitor', 'analyze-dedup']);
  assert.equal(a.code, 0, a.stderr);
  const r = a.json;
  assert.equal(r.states.length, 2);
  const [genesis, commit] = r.states;
  assert.equal(genesis.logicalBytes, 20 * 10_000 + 2 * 50_000);
  assert.ok(genesis.newBytes < genesis.logicalBytes, 'the two identical files are stored once');
  assert.ok(commit.newBytes < 20_000, `the commit added ${commit.newBytes} bytes for a 12-byte change`);
  assert.ok(r.dedupRatio > 1.5);
  assert.equal(r.largest[0].path.startsWith('same-') || r.largest[0].path.startsWith('f'), true);
  assert.equal(cli(['--store', store, 'monitor', 'analyze-dedup']).code, 0);
});
