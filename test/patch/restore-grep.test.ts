// workspace restore --source and grep over states.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync, chmodSync, symlinkSync } from 'node:fs';
import { detachStale, fuseAvailable } from '../../lib/fuse/index.js';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { cli } from '../helpers/cli.js';
import { fullView } from '../helpers/edits.js';
import { randomHistory } from '../helpers/history.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';

function sub(view: Map<string, string>, prefix: string): Map<string, string> {
  return new Map([...view].filter(([k]) => k === prefix || k.startsWith(prefix + '/')));
}

test('restore takes subtrees back from any state; a path the source lacks is removed', async () => {
  const seed = Number(process.env.SEED ?? Date.now() % 100000);
  console.log(`seed ${seed}`);
  const h = await randomHistory(seed, 3);
  const proj = join(h.dir, 'proj');
  h.client.export('proj', proj);
  // Local damage: a directory replaced, a new file, a file made a symlink.
  rmSync(join(h.ws.path, 'src'), { recursive: true, force: true });
  mkdirSync(join(h.ws.path, 'src'));
  writeFileSync(join(h.ws.path, 'src', 'stray'), 'x');
  writeFileSync(join(h.ws.path, 'new.txt'), 'new');
  symlinkSync('nowhere', join(h.ws.path, 'src', 'link'));
  chmodSync(join(h.ws.path, 'src'), 0o700);
  const r = h.client.restore(h.ws.id, { source: 'proj', paths: ['src', 'new.txt'] });
  assert.ok(r.changes.length > 0);
  const got = fullView(h.ws.path);
  assert.deepEqual(sub(got, 'src'), sub(fullView(proj), 'src'));
  assert.equal(got.has('new.txt'), false);
  // Everything back to the head: no change is left (status may still list rewritten inodes).
  h.client.restore(h.ws.id, { source: 'main', paths: ['.'] });
  const head = join(h.dir, 'head');
  h.client.export('main', head);
  assert.deepEqual(fullView(h.ws.path), fullView(head));
  assert.equal((await h.client.workspaceDiff(h.ws.id)).patch.length, 0);
  assert.throws(() => h.client.restore(h.ws.id, { source: 'main', paths: ['no/such'] }), (e: unknown) => isLayerFsError(e) && e.code === 'ERR_NOT_FOUND');
  assert.throws(() => h.client.restore(h.ws.id, { source: 'main', paths: ['../x'] }), (e: unknown) => isLayerFsError(e) && e.code === 'ERR_UNSAFE_PATH');
  // CLI
  writeFileSync(join(h.ws.path, 'new.txt'), 'again');
  const c = cli(['--store', h.store, 'workspace', 'restore', h.ws.id, 'new.txt', '--source', 'main']);
  assert.equal(c.code, 0, c.stderr);
  assert.match(c.stdout, /remove +new\.txt/);
  assertIntact(h.client);
  h.client.close();
});

test('grep finds lines in a state, by path, like grep -n', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib'), { recursive: true });
  writeFileSync(join(src, 'README'), 'Hello world\nnothing here\nhello again\n');
  writeFileSync(join(src, 'lib/a.ts'), 'const hello = 1;\n');
  writeFileSync(join(src, 'lib/b.bin'), Buffer.from('hello\0binary'));
  symlinkSync('README', join(src, 'link'));
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  await c.initLayerStack({ name: 'p', source: src });
  const r = c.grep('hello', 'p');
  assert.deepEqual(r.matches, [
    { path: 'README', line: 3, text: 'hello again' },
    { path: 'lib/a.ts', line: 1, text: 'const hello = 1;' },
  ]);
  assert.deepEqual(r.binaryFiles, ['lib/b.bin']);
  assert.equal(c.grep('HELLO', 'p', { ignoreCase: true }).matches.length, 3);
  assert.deepEqual(c.grep('hello', 'p', { paths: ['lib'] }).matches.map((m) => m.path), ['lib/a.ts']);
  assert.equal(c.grep('a.', 'p', { fixed: true }).matches.length, 0);
  assert.throws(() => c.grep('(', 'p'), (e: unknown) => isLayerFsError(e) && e.code === 'ERR_INVALID_ARGUMENT');
  c.close();
  const out = cli(['--store', store, 'grep', '-i', 'hello', 'p', '--', 'README']);
  assert.equal(out.code, 0, out.stderr);
  assert.equal(out.stdout, 'README:1:Hello world\nREADME:3:hello again\n');
  assert.equal(cli(['--store', store, 'grep', 'zzz', 'p']).code, 1);
});

test('grep streams a large file: the same lines as grep -n', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const lines: string[] = [];
  for (let i = 0; i < 200_000; i++) lines.push(i % 997 === 0 ? `needle ${i}` : `hay ${i} ${'h'.repeat(i % 37)}`);
  writeFileSync(join(src, 'big.txt'), lines.join('\n'));
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  await c.initLayerStack({ name: 'p', source: src });
  const got = c.grep('needle', 'p').matches.map((m) => `${m.line}:${m.text}`);
  const want = spawnSync('grep', ['-n', 'needle', join(src, 'big.txt')], { encoding: 'utf8' }).stdout.trim().split('\n');
  assert.equal(got.length, want.length);
  assert.deepEqual(got, want);
  assert.equal(c.grep('needle', 'p', { limit: 5 }).truncated, true);
  c.close();
});

const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

test('FUSE Workspace: workspace diff --patch and restore through the mount', { skip: fuseSkip, timeout: 120_000 }, async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'lib'), { recursive: true });
  writeFileSync(join(src, 'README'), 'one\ntwo\n');
  writeFileSync(join(src, 'lib/a.txt'), 'a\n');
  const store = join(dir, 's.sqlite');
  const client = Client.create(store);
  const init = await client.initLayerStack({ name: 'p', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  const at = join(dir, 'ws');
  try {
    const ws = await client.createWorkspace('main', { at, projection: 'fuse' });
    writeFileSync(join(at, 'README'), 'one\n2\n');
    rmSync(join(at, 'lib/a.txt'));
    const d = await client.workspaceDiff(ws.id);
    assert.equal(d.patch.toString(), 'diff --git a/README b/README\nindex 814f4a4..99b356d 100644\n--- a/README\n+++ b/README\n@@ -1,2 +1,2 @@\n one\n-two\n+2\ndiff --git a/lib/a.txt b/lib/a.txt\ndeleted file mode 100644\nindex 7898192..0000000\n--- a/lib/a.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n');
    client.restore(ws.id, { source: 'p', paths: ['.'] });
    assert.equal(readFileSync(join(at, 'README'), 'utf8'), 'one\ntwo\n');
    assert.equal(readFileSync(join(at, 'lib/a.txt'), 'utf8'), 'a\n');
    assert.equal((await client.workspaceDiff(ws.id)).patch.length, 0);
    await client.endWorkspace(ws.id, { discard: true });
  } finally {
    await client.stopDaemon({ discard: true }).catch(() => {});
    await detachStale(at).catch(() => false);
    client.close();
  }
  assertStoreIntact(store);
});
