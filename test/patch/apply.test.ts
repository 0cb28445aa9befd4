// apply: a state's changes into an existing directory or git work tree — round trips of random
// edit scripts (seed printed), conflicts leave everything as it was, dirty work trees are
// refused, symlinks are never followed out of the directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { cli } from '../helpers/cli.js';
import { fullView, gitView } from '../helpers/edits.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { git, randomHistory } from '../helpers/history.js';

test('apply of random edit scripts onto an export of the first state gives the second, modes included', async () => {
  const seed = Number(process.env.SEED ?? Date.now() % 100000);
  console.log(`seed ${seed}`);
  const h = await randomHistory(seed, 6);
  for (let i = 1; i < h.states.length; i++) {
    const [a, b] = [h.states[i - 1]!, h.states[i]!];
    const target = join(h.dir, `apply-${i}`);
    h.client.export(a, target);
    const r = h.client.apply(b, target, { from: a });
    assert.equal(r.outcome, 'Applied', JSON.stringify(r.conflicts));
    const want = join(h.dir, `want-${i}`);
    h.client.export(b, want);
    assert.deepEqual(fullView(target), fullView(want), `seed ${seed} step ${i}: ${h.logs[i - 1]!.join('; ')}`);
    // Applying again finds everything already there.
    assert.deepEqual(h.client.apply(b, target, { from: a }).changes, []);
  }
  // Default base: the Layer the Branch was forked from.
  const all = join(h.dir, 'all');
  h.client.export('proj', all);
  assert.equal(h.client.apply('main', all).outcome, 'Applied');
  assert.deepEqual(fullView(all), fullView(h.ws.path));
  h.client.close();
});

test('a local edit is a conflict and nothing is written; --check writes nothing', async () => {
  const h = await randomHistory(3, 1, 20);
  const target = join(h.dir, 't');
  h.client.export('proj', target);
  const changed = h.client.apply('main', target, { check: true });
  assert.equal(changed.outcome, 'Checked');
  assert.ok(changed.changes.length > 0);
  const pristine = fullView(target);
  const victim = changed.changes.find((c) => c.change === 'write' && existsSync(join(target, c.path)))!;
  assert.ok(victim, 'the script modified some file');
  writeFileSync(join(target, victim.path), 'local edit\n');
  const before = fullView(target);
  const r = h.client.apply('main', target);
  assert.equal(r.outcome, 'Conflicts');
  assert.deepEqual(r.conflicts.map((c) => c.path), [victim.path]);
  assert.deepEqual(fullView(target), before);
  assert.notDeepEqual(before, pristine);
  h.client.close();
});

test('git work trees: dirty refused unless --force; --git stages the changes', async () => {
  const h = await randomHistory(5, 1, 15);
  const target = join(h.dir, 'repo');
  h.client.export('proj', target);
  git(target, ['init', '-q']);
  git(target, ['add', '-A']);
  git(target, ['commit', '-qm', 'base']);
  // A tracked symlink may dangle, so the dirty edit goes to a regular file.
  const tracked = git(target, ['ls-files']).split('\n').filter((p) => p && !p.includes('\\') && !p.startsWith('"') && lstatSync(join(target, p)).isFile())[0]!;
  const original = readFileSync(join(target, tracked));
  writeFileSync(join(target, tracked), Buffer.concat([original, Buffer.from('dirty\n')]));
  assert.throws(() => h.client.apply('main', target, { git: true }), (e: unknown) => isLayerFsError(e) && e.code === 'ERR_DIRTY');
  writeFileSync(join(target, tracked), original);
  const r = h.client.apply('main', target, { git: true });
  assert.equal(r.outcome, 'Applied');
  const staged = git(target, ['diff', '--cached', '--name-only', '-z']).split('\0').filter(Boolean);
  assert.ok(staged.length > 0);
  assert.equal(git(target, ['status', '--porcelain', '--untracked-files=no']).split('\n').filter((l) => l && l[1] !== ' ').length, 0);
  assert.deepEqual(gitView(target), gitView(h.ws.path));
  h.client.close();
});

test('a symlinked directory in the target is never followed', async () => {
  const dir = tempDir();
  const h = await randomHistory(9, 0);
  const target = join(dir, 't');
  const outside = join(dir, 'outside');
  mkdirSync(outside);
  h.client.export('proj', target);
  writeFileSync(join(h.ws.path, 'escape.txt'), 'x');
  mkdirSync(join(h.ws.path, 'sub'), { recursive: true });
  writeFileSync(join(h.ws.path, 'sub', 'f'), 'inside\n');
  await h.client.commitWorkspace(h.ws.id, { message: 'add sub' });
  symlinkSync(outside, join(target, 'sub'));
  assert.throws(() => h.client.apply('main', target), (e: unknown) => isLayerFsError(e) && e.code === 'ERR_UNSAFE_PATH');
  assert.equal(existsSync(join(outside, 'f')), false);
  assert.equal(existsSync(join(target, 'escape.txt')), false);
  // CLI: conflicts exit 1 and name the path.
  const c = cli(['--store', h.store, 'apply', 'main', '--to', target, '--from', 'proj', '--check', '--', 'escape.txt']);
  assert.equal(c.code, 0, c.stderr);
  assert.match(c.stdout, /write +escape\.txt/);
  writeFileSync(join(target, 'escape.txt'), 'mine');
  const k = cli(['--store', h.store, 'apply', 'main', '--to', target, '--', 'escape.txt']);
  assert.equal(k.code, 1);
  assert.match(k.stdout, /CONFLICTS[\s\S]*escape\.txt/);
  h.client.close();
});

test('large files are compared and written piece by piece', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const big = seededBytes(5, 5 * 1024 * 1024);
  writeFileSync(join(src, 'big.bin'), big);
  const c = Client.create(join(dir, 's.sqlite'));
  const init = await c.initLayerStack({ name: 'p', source: src });
  c.forkBranch({ name: 'main', layer: init.layer.id });
  const ws = await c.createWorkspace('main', { at: join(dir, 'ws'), projection: 'materialize' });
  const edited = Buffer.from(big);
  edited[3 * 1024 * 1024] = edited[3 * 1024 * 1024]! ^ 0xff;
  writeFileSync(join(ws.path, 'big.bin'), edited);
  await c.commitWorkspace(ws.id, { message: 'flip' });
  const target = join(dir, 't');
  c.export('p', target);
  const local = Buffer.from(big);
  local[big.length - 1] = local[big.length - 1]! ^ 1;
  writeFileSync(join(target, 'big.bin'), local);
  assert.equal(c.apply('main', target).outcome, 'Conflicts');
  writeFileSync(join(target, 'big.bin'), big);
  assert.equal(c.apply('main', target).outcome, 'Applied');
  assert.ok(readFileSync(join(target, 'big.bin')).equals(edited));
  assert.deepEqual(c.apply('main', target).changes, []);
  c.close();
});
