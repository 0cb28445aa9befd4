// diff --patch: git-compatible patches. Random edit scripts (seed printed) between Commits;
// each patch applied by `git apply` to an export of the first state gives the second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { cli } from '../helpers/cli.js';
import { gitView } from '../helpers/edits.js';
import { git, randomHistory } from '../helpers/history.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

test('diff --patch of random edit scripts applies with git apply, byte for byte', async () => {
  const seed = Number(process.env.SEED ?? Date.now() % 100000);
  console.log(`seed ${seed}`);
  const h = await randomHistory(seed, 6);
  for (let i = 1; i < h.states.length; i++) {
    const [a, b] = [h.states[i - 1]!, h.states[i]!];
    const target = join(h.dir, `apply-${i}`);
    h.client.export(a, target);
    git(target, ['init', '-q']);
    const p = h.client.diffPatch(a, b, { binary: true });
    if (p.patch.length) git(target, ['apply', '--whitespace=nowarn', '-'], p.patch);
    const want = join(h.dir, `want-${i}`);
    h.client.export(b, want);
    assert.deepEqual(gitView(target), gitView(want), `seed ${seed} step ${i}: ${h.logs[i - 1]!.join('; ')}`);
  }
  assertIntact(h.client);
  h.client.close();
});

test('workspace diff --patch applies to an export of its base; binaries summarised unless --binary', async () => {
  const h = await randomHistory(7, 1);
  writeFileSync(join(h.ws.path, 'blob.bin'), Buffer.from([1, 0, 2, 3]));
  writeFileSync(join(h.ws.path, 'note.txt'), 'hello\n');
  const p = await h.client.workspaceDiff(h.ws.id, { binary: true });
  const target = join(h.dir, 'wsapply');
  h.client.export('main', target);
  git(target, ['init', '-q']);
  git(target, ['apply', '-'], p.patch);
  assert.deepEqual(gitView(target), gitView(h.ws.path));
  const summary = await h.client.workspaceDiff(h.ws.id, { paths: ['blob.bin'] });
  assert.match(summary.patch.toString(), /^diff --git a\/blob.bin b\/blob.bin\nnew file mode 100644\nindex 0000000\.\.[0-9a-f]{7}\nBinary files \/dev\/null and b\/blob.bin differ\n$/);
  assert.equal(summary.files[0]!.binary, true);
  assert.equal(summary.files[0]!.newSize, 4);
  const forced = await h.client.workspaceDiff(h.ws.id, { paths: ['blob.bin'], text: true });
  assert.match(forced.patch.toString('latin1'), /\+\x01\x00\x02\x03\n\\ No newline at end of file/);
  h.client.close();
});

test('CLI: diff --stat and --patch match git for a small change', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'one\ntwo\nthree\n');
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  const init = await c.initLayerStack({ name: 'p', source: src });
  c.forkBranch({ name: 'main', layer: init.layer.id });
  const ws = await c.createWorkspace('main', { at: join(dir, 'ws'), projection: 'materialize' });
  writeFileSync(join(ws.path, 'a.txt'), 'one\n2\nthree\n');
  await c.commitWorkspace(ws.id, { message: 'm' });
  c.close();
  const patch = cli(['--store', store, 'diff', 'p', 'main', '--patch']);
  assert.equal(patch.code, 0, patch.stderr);
  // The same change made in git gives the same text.
  const g = join(dir, 'g');
  mkdirSync(g);
  git(g, ['init', '-q']);
  writeFileSync(join(g, 'a.txt'), 'one\ntwo\nthree\n');
  git(g, ['add', '.']);
  git(g, ['commit', '-qm', 'a']);
  writeFileSync(join(g, 'a.txt'), 'one\n2\nthree\n');
  assert.equal(patch.stdout, git(g, ['diff']));
  const stat = cli(['--store', store, 'diff', 'p', 'main', '--stat']);
  assert.equal(stat.stdout, git(g, ['diff', '--stat=80']));
  const names = cli(['--store', store, 'diff', 'p', 'main', '--', 'a.txt']);
  assert.equal(names.stdout, 'M\ta.txt\n');
  const none = cli(['--store', store, 'diff', 'p', 'main', '--', 'other']);
  assert.equal(none.stdout, '');
  const bad = cli(['--store', store, 'diff', 'p', 'nope']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /ERR_NOT_FOUND/);
});

test('a file over 64 MiB is summarised from streamed blob ids (text or not)', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const big = Buffer.alloc(65 * 1024 * 1024, 0x61);
  writeFileSync(join(src, 'big.txt'), big);
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  const init = await c.initLayerStack({ name: 'p', source: src });
  c.forkBranch({ name: 'main', layer: init.layer.id });
  const ws = await c.createWorkspace('main', { at: join(dir, 'ws'), projection: 'materialize' });
  big[1000] = 0x62;
  writeFileSync(join(ws.path, 'big.txt'), big);
  const wsPatch = await c.workspaceDiff(ws.id);
  await c.commitWorkspace(ws.id, { message: 'one byte' });
  const p = c.diffPatch('p', 'main', { fullIndex: true });
  const ids = ['src/big.txt', 'ws/big.txt'].map((f) => git(dir, ['hash-object', f]).trim());
  const want = `diff --git a/big.txt b/big.txt\nindex ${ids[0]}..${ids[1]} 100644\nBinary files a/big.txt and b/big.txt differ\n`;
  assert.equal(p.patch.toString(), want);
  assert.equal(wsPatch.patch.toString(), want.replace(/index (\w{7})\w+\.\.(\w{7})\w+/, 'index $1..$2'));
  assert.deepEqual([p.files[0]!.binary, p.files[0]!.newSize], [true, big.length]);
  c.close();
});

test('the patch text equals git diff for modify, add, delete, chmod, symlink and copy-then-delete renames', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  const lines = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n') + '\n';
  writeFileSync(join(src, 'keep.txt'), lines);
  writeFileSync(join(src, 'gone.txt'), 'bye\n');
  writeFileSync(join(src, 'd/moved.txt'), lines.replace('line 3\n', 'line three\n'));
  writeFileSync(join(src, 'run.sh'), '#!/bin/sh\n');
  writeFileSync(join(src, 'img.bin'), seededBytes(3, 3000));
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  const init = await c.initLayerStack({ name: 'p', source: src });
  c.forkBranch({ name: 'main', layer: init.layer.id });
  const ws = await c.createWorkspace('main', { at: join(dir, 'ws'), projection: 'materialize' });
  const g = join(dir, 'g');
  cpSync(src, g, { recursive: true });
  git(g, ['init', '-q']);
  git(g, ['add', '-A']);
  git(g, ['commit', '-qm', 'a']);
  for (const root of [ws.path, g]) {
    writeFileSync(join(root, 'keep.txt'), lines.replace('line 10\n', 'line ten\n').replace('line 25\n', ''));
    rmSync(join(root, 'gone.txt'));
    writeFileSync(join(root, 'new.txt'), 'hello\n');
    chmodSync(join(root, 'run.sh'), 0o755);
    writeFileSync(join(root, 'img.bin'), Buffer.concat([seededBytes(3, 1000), Buffer.from([0]), seededBytes(4, 2500)]));
    symlinkSync('keep.txt', join(root, 'link'));
    // A rename as a copy and a delete: a new inode, found by its content.
    writeFileSync(join(root, 'd/renamed.txt'), readFileSync(join(root, 'd/moved.txt')));
    rmSync(join(root, 'd/moved.txt'));
  }
  await c.commitWorkspace(ws.id, { message: 'm' });
  git(g, ['add', '-A']);
  git(g, ['commit', '-qm', 'b']);
  assert.equal(c.diffPatch('p', 'main').patch.toString(), git(g, ['diff', '-M', 'HEAD~1', 'HEAD']));
  // With --binary, git may choose `delta` data where literal data is written here; both apply.
  const withData = c.diffPatch('p', 'main', { binary: true, fullIndex: true }).patch.toString('latin1');
  const strip = (t: string) => t.replace(/GIT binary patch\n[\s\S]*?\n\n(?:literal|delta) \d+\n[\s\S]*?\n\n/g, 'GIT binary patch\n');
  assert.equal(strip(withData), strip(git(g, ['diff', '-M', '--binary', '--full-index', 'HEAD~1', 'HEAD'])));
  c.close();
});
