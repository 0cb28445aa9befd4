// Excludes in gitignore syntax: --exclude (repeatable) and .layerfsignore, for import and for
// materialized commits (new paths only: what the state already has stays, as in git).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact, assertStoreIntact } from '../helpers/integrity.js';

function tree(root: string): void {
  for (const d of ['src', 'node_modules/pkg', 'build', 'src/build', '.git/objects']) mkdirSync(join(root, d), { recursive: true });
  writeFileSync(join(root, 'src/a.ts'), 'a');
  writeFileSync(join(root, 'src/build/keep.ts'), 'k');
  writeFileSync(join(root, 'node_modules/pkg/index.js'), 'x');
  writeFileSync(join(root, 'build/out.js'), 'o');
  writeFileSync(join(root, 'debug.log'), 'l');
  writeFileSync(join(root, 'important.log'), 'i');
  writeFileSync(join(root, '.git/objects/ab'), 'g');
}

test('import: --exclude globs and .layerfsignore (gitignore syntax: negation, anchored, directories only)', () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  tree(src);
  writeFileSync(join(src, '.layerfsignore'), '# comments and blank lines are ignored\n\nnode_modules/\n*.log\n!important.log\n');
  const env = { LAYERFS_STORE: join(dir, 'store.sqlite'), LAYERFS_CONTEXT: join(dir, 'ctx.json') };
  assert.equal(cli(['db', 'create', env.LAYERFS_STORE], env).code, 0);
  const r = cli(['--json', 'layerstack', 'init', '--name', 'p', src, '--exclude', '.git', '--exclude', '/build/'], env);
  assert.equal(r.code, 0, r.stderr);
  const names = (path?: string) => cli(['--json', 'ls', 'p', ...(path ? [path] : [])], env).json.entries.map((e: { name: string }) => e.name);
  assert.deepEqual(names(), ['.layerfsignore', 'important.log', 'src']);
  assert.deepEqual(names('src'), ['a.ts', 'build'], 'an anchored /build/ leaves src/build alone');
  assert.equal(r.json.files, 4);
  assert.equal(cli(['--json', 'layerstack', 'init', '--name', 'q', src, '--exclude', ''], env).json.error.code, 'ERR_INVALID_ARGUMENT');
  assertStoreIntact(env.LAYERFS_STORE);
});

test('SDK: initLayerStack({ exclude }); a materialized commit leaves out new paths .layerfsignore matches, keeps tracked ones', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'old.log'), 'tracked');
  writeFileSync(join(src, 'skip.tmp'), 'x');
  const c = Client.create(join(dir, 'store.sqlite'));
  try {
    await c.initLayerStack({ name: 'p', source: src, exclude: ['*.tmp'] });
    assert.deepEqual(c.ls('p').map((e) => e.name), ['old.log']);
    c.forkBranch({ name: 'b', layer: 'p' });
    const ws = await c.createWorkspace('b', { at: join(dir, 'ws'), projection: 'materialize' });
    tree(ws.path);
    writeFileSync(join(ws.path, '.layerfsignore'), 'node_modules/\n*.log\n.git/\n');
    writeFileSync(join(ws.path, 'old.log'), 'tracked, edited');
    const status = await c.workspaceStatus(ws.id);
    const paths = status.changes.map((e) => e.path);
    assert.ok(!paths.some((p) => p.startsWith('node_modules') || p.startsWith('.git') || p === 'debug.log'), paths.join(' '));
    assert.ok(paths.includes('old.log') && paths.includes('.layerfsignore') && paths.includes('src/a.ts'));
    const r = await c.commitWorkspace(ws.id);
    assert.equal(r.outcome, 'Created');
    assert.deepEqual(c.ls('b').map((e) => e.name), ['.layerfsignore', 'build', 'old.log', 'src']);
    assert.equal(c.cat('b', 'old.log').toString(), 'tracked, edited');
    // The files left out stay in the Workspace, uncommitted and unlisted; the next commit is UpToDate.
    assert.equal((await c.workspaceStatus(ws.id)).clean, true);
    assert.equal((await c.commitWorkspace(ws.id)).outcome, 'UpToDate');
    assert.equal((await c.endWorkspace(ws.id)).outcome, 'Ended');
    assertIntact(c);
  } finally {
    c.close();
  }
});

test('workspace commit --exclude (repeatable) leaves new matching paths out of that Commit', () => {
  const dir = tempDir();
  const env = { LAYERFS_STORE: join(dir, 'store.sqlite'), LAYERFS_CONTEXT: join(dir, 'ctx.json'), LAYERFS_PROJECTION: 'materialize' };
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src/a.txt'), 'a');
  const run = (...args: string[]) => cli(['--json', ...args], env);
  assert.equal(run('db', 'create', env.LAYERFS_STORE).code, 0);
  assert.equal(run('layerstack', 'init', '--name', 'p', join(dir, 'src')).code, 0);
  assert.equal(run('branch', 'fork', '--name', 'b', '--layer', 'p#0').code, 0);
  const ws = run('workspace', 'create', 'b', '--at', join(dir, 'ws')).json.workspace;
  tree(ws.path);
  assert.equal(run('workspace', 'commit', ws.id, '--exclude', '').json.error.code, 'ERR_INVALID_ARGUMENT');
  const r = run('workspace', 'commit', ws.id, '--exclude', 'node_modules/', '--exclude', '.git', '--exclude', '*.log');
  assert.equal(r.json.outcome, 'Created', r.stdout + r.stderr);
  assert.deepEqual(run('ls', 'b').json.entries.map((e: { name: string }) => e.name), ['a.txt', 'build', 'src']);
  // Left out of that Commit only: without the patterns, the next status lists them as new.
  const status = run('workspace', 'status', ws.id).json.changes.map((e: { path: string }) => e.path);
  assert.ok(status.includes('debug.log') && status.includes('node_modules'), status.join(' '));
  assert.equal(run('workspace', 'end', ws.id, '--discard').json.outcome, 'Ended');
  assertStoreIntact(env.LAYERFS_STORE);
});
