// Reader, the read path alone (what `layerfs cat` and `ls` use): the same bytes, entries and
// typed errors as the Client's readFile, ls and stat, through a mapped read-only connection that
// stays right while another connection writes, repacks and VACUUMs the same Store file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { Reader } from '../../lib/sdk/reader.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes } from '../helpers/random.js';
import { tempDir } from '../helpers/tmp.js';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};

test('Reader: the Client’s bytes, entries and errors, across a concurrent write and repack', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib'), { recursive: true });
  const big = seededBytes(0x4ead, 3 * 1048576 + 12345);
  writeFileSync(join(src, 'big.bin'), big);
  writeFileSync(join(src, 'lib/a.txt'), 'a\n');
  const path = join(dir, 'store.layerfs');
  const client = Client.create(path);
  const layer = (await client.initLayerStack({ name: 'proj', source: src })).layer.id;
  const reader = Reader.open(path);
  try {
    const whole = () => Buffer.concat([...reader.readFile('proj', 'big.bin')]);
    assert.ok(whole().equals(big));
    assert.ok(Buffer.concat([...reader.readFile(layer, 'big.bin', { offset: 1048570, length: 70000 })]).equals(big.subarray(1048570, 1048570 + 70000)));
    assert.deepEqual(reader.ls('proj'), client.ls('proj'));
    assert.deepEqual(reader.ls('proj', 'lib'), client.ls('proj', 'lib'));
    assert.deepEqual(reader.stat(layer, 'big.bin'), client.stat(layer, 'big.bin'));
    assert.deepEqual(reader.layerStacks(), client.layerStacks());
    assert.deepEqual(reader.layers({ layerStack: 'proj' }), client.layers({ layerStack: 'proj' }));
    assert.equal(codeOf(() => [...reader.readFile('proj', 'lib')]), codeOf(() => [...client.readFile('proj', 'lib')]));
    assert.equal(codeOf(() => [...reader.readFile('proj', 'nope')]), 'ERR_NOT_FOUND');
    assert.equal(codeOf(() => reader.ls('nosuch')), codeOf(() => client.ls('nosuch')));

    // Another connection grows the file, then repacks it (rewrites every pack row and VACUUMs).
    writeFileSync(join(src, 'more.bin'), seededBytes(0x4eae, 2 * 1048576));
    await client.initLayerStack({ name: 'more', source: src });
    await client.repack({ full: true });
    assert.ok(whole().equals(big));
    assert.ok(Buffer.concat([...reader.readFile('more', 'more.bin')]).equals(seededBytes(0x4eae, 2 * 1048576)));
    assert.deepEqual(reader.layers(), client.layers({}));
  } finally {
    reader.close();
  }
  assertIntact(client);
  client.close();
});

test('Reader.log: the Client’s log of a Branch (limit, unknown Branch), while the Workspace commits', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'a\n');
  const path = join(dir, 'store.layerfs');
  const client = Client.create(path);
  await client.initLayerStack({ name: 'proj', source: src });
  client.forkBranch({ name: 'dev', layer: 'proj' });
  const reader = Reader.open(path);
  try {
    assert.deepEqual(reader.log('dev'), []);
    const ws = await client.createWorkspace('dev', { at: join(dir, 'ws') });
    for (const text of ['one\n', 'two\n', 'three\n']) {
      writeFileSync(join(ws.path, 'a.txt'), text);
      assert.equal((await client.commitWorkspace(ws.id)).outcome, 'Created');
    }
    assert.equal(reader.log('dev').length, 3);
    assert.deepEqual(reader.log('dev'), client.log('dev'));
    assert.deepEqual(reader.log('dev', { limit: 2 }), client.log('dev', { limit: 2 }));
    assert.equal(codeOf(() => reader.log('nosuch')), codeOf(() => client.log('nosuch')));
    assert.equal(codeOf(() => reader.log('nosuch')), 'ERR_NOT_FOUND');
    await client.endWorkspace(ws.id);
  } finally {
    reader.close();
  }
  client.close();
});
