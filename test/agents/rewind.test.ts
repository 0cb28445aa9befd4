// rewind publishes a new Commit with an older state's tree (the head never moves backwards);
// checkpoints pin a Branch's state by name; both through the SDK and the CLI.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { cli } from '../helpers/cli.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';

async function setup() {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'README'), 'readme\n');
  const store = join(dir, 'store.sqlite');
  const client = Client.create(store);
  const init = await client.initLayerStack({ name: 'proj', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  const commits: string[] = [];
  for (const name of ['one', 'two', 'three']) {
    const r = await client.toolCall('main', (ws) => (writeFileSync(join(ws.path, `${name}.txt`), name), { keep: true, message: `add ${name}` }), { projection: 'materialize' });
    assert.equal(r.outcome, 'Created');
    commits.push(r.commit!.id);
    if (name === 'two') client.checkpoint('main', 'after-two');
  }
  return { store, client, commits, layer: init.layer };
}

const names = (c: Client, ref: string) => c.ls(ref, '').map((e) => e.name).sort();

test('rewind to a Commit, a checkpoint and the base Layer: new Commits on top, trees equal', async () => {
  const { client, commits, layer } = await setup();
  const [c1, , c3] = commits as [string, string, string];
  const r1 = client.rewind('main', c1.slice(0, 10));
  assert.equal(r1.outcome, 'Created');
  if (r1.outcome !== 'Created') return;
  assert.equal(r1.previousHead, c3);
  assert.equal(r1.commit.parentCommitId, c3, 'the head moved forwards');
  assert.equal(r1.commit.rootId, client.log('main').find((c) => c.id === c1)!.rootId);
  assert.equal(r1.commit.message, `rewind to ${c1.slice(0, 10)}`);
  assert.deepEqual(names(client, 'main'), ['README', 'one.txt']);
  assert.equal(r1.target.kind, 'commit');

  const again = client.rewind('main', c1);
  assert.equal(again.outcome, 'UpToDate');

  const r2 = client.rewind('main', 'after-two', { message: 'back to two', metadata: { reason: 'test' } });
  assert.equal(r2.outcome, 'Created');
  assert.equal(r2.target.checkpoint, 'after-two');
  assert.deepEqual(names(client, 'main'), ['README', 'one.txt', 'two.txt']);

  const r3 = client.rewind('main', layer.id);
  assert.equal(r3.outcome, 'Created');
  assert.equal(r3.target.kind, 'layer');
  assert.deepEqual(names(client, 'main'), ['README']);
  // Nothing was lost: every Commit is still in the log, newest first.
  assert.equal(client.log('main').length, 6);
  assert.ok(client.log('main').some((c) => c.id === c3));
  assertIntact(client);
  client.close();
});

test('typed errors: unknown target, duplicate or invalid checkpoint name, another Branch\'s Commit', async () => {
  const { client, commits } = await setup();
  assert.throws(() => client.rewind('main', 'nope'), (e) => isLayerFsError(e, 'ERR_NOT_FOUND') && /checkpoint/.test(String(e.details.hint)));
  assert.throws(() => client.checkpoint('main', 'after-two'), (e) => isLayerFsError(e, 'ERR_NAME_TAKEN'));
  assert.throws(() => client.checkpoint('main', 'Bad Name'), (e) => isLayerFsError(e, 'ERR_INVALID_NAME'));
  client.forkBranch({ name: 'other', layer: client.branch('main').baseLayerId });
  assert.throws(() => client.rewind('other', commits[0]!), (e) => isLayerFsError(e, 'ERR_NOT_FOUND'));
  assert.throws(() => client.rewind('missing', commits[0]!), (e) => isLayerFsError(e, 'ERR_NOT_FOUND'));
  client.checkpoint('other', 'empty');
  assert.equal(client.checkpoints('other')[0]!.commitId, null);
  assert.equal(client.rewind('other', 'empty').outcome, 'UpToDate');
  assertIntact(client);
  client.close();
});

test('CLI: checkpoint, checkpoints, rewind (human and --json)', async () => {
  const { store, client, commits } = await setup();
  client.close();
  const cp = cli(['--store', store, '--json', 'checkpoint', 'main', 'three']);
  assert.equal(cp.code, 0, cp.stderr);
  assert.equal(cp.json.checkpoint.commitId, commits[2]);
  const list = cli(['--store', store, 'checkpoints', 'main']);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^after-two\t/m);
  assert.match(list.stdout, /^three\t/m);
  const rw = cli(['--store', store, '--json', 'rewind', 'main', 'after-two', '-m', 'undo three', '--metadata', '{"by":"cli"}']);
  assert.equal(rw.code, 0, rw.stderr);
  assert.equal(rw.json.outcome, 'Created');
  assert.equal(rw.json.commit.message, 'undo three');
  assert.deepEqual(rw.json.commit.metadata, { by: 'cli' });
  const human = cli(['--store', store, 'rewind', 'main', 'three']);
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, /^CREATED commit [0-9a-f]{64} = checkpoint three/);
  const bad = cli(['--store', store, '--json', 'rewind', 'main', 'zzz']);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stdout + bad.stderr, /ERR_NOT_FOUND/);
  const c = Client.connect(store);
  assert.deepEqual(names(c, 'main'), ['README', 'one.txt', 'three.txt', 'two.txt']);
  assertIntact(c);
  c.close();
});
