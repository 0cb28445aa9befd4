// Finding the Store like git finds .git, and acting on the Workspace the working directory is in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { assertStoreIntact } from '../helpers/integrity.js';

test('precedence: --store, then $LAYERFS_STORE, then the nearest .layerfs/ upward, then the context file', () => {
  const dir = tempDir();
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json') };
  const show = (cwd: string, extra: Record<string, string> = {}, args: string[] = []) => cli(['--json', ...args, 'context', 'show'], { ...env, ...extra }, cwd).json;
  mkdirSync(join(dir, 'outer/inner/deep'), { recursive: true });
  mkdirSync(join(dir, 'elsewhere'));

  assert.equal(show(join(dir, 'elsewhere')).store, null);
  const none = cli(['--json', 'ls', 'x'], env, join(dir, 'elsewhere'));
  assert.equal(none.json.error.code, 'ERR_NO_CONTEXT');
  assert.match(none.json.error.hint, /layerfs init/);

  // init makes the directory, like git init; a second init changes nothing.
  const init = cli(['--json', 'init'], env, join(dir, 'outer'));
  assert.equal(init.json.outcome, 'Created');
  assert.equal(cli(['--json', 'init'], env, join(dir, 'outer')).json.outcome, 'Exists');
  const outer = join(dir, 'outer/.layerfs/store.sqlite');
  assert.equal(show(join(dir, 'outer/inner/deep')).store, outer);

  // db create makes missing directories too.
  const other = join(dir, 'other/a/b/store.sqlite');
  assert.equal(cli(['--json', 'db', 'create', other], env).code, 0);
  assert.equal(cli(['context', 'use', '--store', other], env).code, 0);
  assert.equal(show(join(dir, 'elsewhere')).store, other, 'the context file, when nothing nearer');
  assert.equal(show(join(dir, 'outer/inner')).store, outer, 'the nearest .layerfs/ beats the context file');

  // A nearer project: init in inner.
  assert.equal(cli(['init', 'inner'], env, join(dir, 'outer')).code, 0);
  assert.equal(show(join(dir, 'outer/inner/deep')).store, join(dir, 'outer/inner/.layerfs/store.sqlite'));
  assert.equal(show(join(dir, 'outer/inner/deep'), { LAYERFS_STORE: other }).store, other, '$LAYERFS_STORE beats discovery');
  assert.equal(show(join(dir, 'outer/inner/deep'), { LAYERFS_STORE: other }, ['--store', outer]).store, outer, '--store beats all');

  // context use --project: only below that directory.
  mkdirSync(join(dir, 'proj/sub'), { recursive: true });
  assert.equal(cli(['--json', '--store', other, 'context', 'use', '--project'], env, join(dir, 'proj')).code, 0);
  assert.ok(existsSync(join(dir, 'proj/.layerfs/context.json')));
  assert.equal(show(join(dir, 'proj/sub')).store, other);
  assert.match(show(join(dir, 'proj/sub')).via, /proj\/\.layerfs\/context\.json$/);
  for (const s of [outer, other]) assertStoreIntact(s);
});

test("import leaves out the Store's own directory (.layerfs/) and <store>.d; a Store file beside the tree's files too", async () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'proj/src'), { recursive: true });
  writeFileSync(join(dir, 'proj/src/a.txt'), 'a');
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json') };
  assert.equal(cli(['init'], env, join(dir, 'proj')).code, 0);
  mkdirSync(join(dir, 'proj/.layerfs/tour-workspace'));
  const r = cli(['--json', 'layerstack', 'init', '--name', 'p', '.'], env, join(dir, 'proj'));
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(cli(['--json', 'ls', 'p'], env, join(dir, 'proj')).json.entries.map((e: { name: string }) => e.name), ['src']);
  assert.equal(r.json.directories, 2, 'the root and src');

  // The Store directly in the imported directory: its file, WAL and <store>.d are left out.
  mkdirSync(join(dir, 'flat'));
  writeFileSync(join(dir, 'flat/keep.txt'), 'k');
  const c = Client.create(join(dir, 'flat/store.sqlite'));
  try {
    await c.initLayerStack({ name: 'one', empty: true }); // writes <store>.d/receipts.jsonl
    assert.ok(existsSync(join(dir, 'flat/store.sqlite.d')));
    const init = await c.initLayerStack({ name: 'flat', source: join(dir, 'flat') });
    assert.deepEqual(c.ls('flat').map((e) => e.name), ['keep.txt']);
    assert.equal(init.files, 1);
  } finally {
    c.close();
  }
  assertStoreIntact(join(dir, 'flat/store.sqlite'));
});

test('workspace status, commit and end with no argument act on the Workspace containing the working directory', () => {
  const dir = tempDir();
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json'), LAYERFS_PROJECTION: 'materialize' };
  mkdirSync(join(dir, 'proj/src/deep'), { recursive: true });
  writeFileSync(join(dir, 'proj/src/deep/a.txt'), 'a');
  const at = (cwd: string, ...args: string[]) => cli(['--json', ...args], env, cwd);
  assert.equal(at(join(dir, 'proj'), 'init').code, 0);
  assert.equal(at(join(dir, 'proj'), 'layerstack', 'init', '--name', 'p', './src').code, 0);
  assert.equal(at(join(dir, 'proj'), 'branch', 'fork', '--name', 'b', '--layer', 'p#0').code, 0);
  const ws = at(join(dir, 'proj'), 'workspace', 'create', 'b', '--at', 'ws');
  assert.equal(ws.code, 0, ws.stderr);
  const deep = join(dir, 'proj/ws/deep');
  writeFileSync(join(deep, 'new.txt'), 'n');
  const status = at(deep, 'workspace', 'status');
  assert.equal(status.code, 0, status.stderr);
  assert.ok(status.json.changes.some((e: { path: string; change: string }) => e.path === 'deep/new.txt' && e.change === 'added'));
  assert.equal(at(deep, 'workspace', 'status', '.').json.workspace.id, ws.json.workspace.id, '`status .` from a subdirectory');
  assert.equal(at(deep, 'workspace', 'commit').json.outcome, 'Created');
  assert.equal(at(deep, 'workspace', 'status').json.clean, true);
  assert.equal(at(deep, 'workspace', 'end').json.outcome, 'Ended');
  assert.ok(!existsSync(join(dir, 'proj/ws')));

  // Ending it again says that it has ended, not that it never existed.
  const again = at(join(dir, 'proj'), 'workspace', 'end', ws.json.workspace.id);
  assert.equal(again.code, 1);
  assert.equal(again.json.error.code, 'ERR_NOT_FOUND');
  assert.match(again.json.error.message, /has ended/);
  assert.match(at(join(dir, 'proj'), 'workspace', 'end', './ws').json.error.message, /has ended/);
  const outside = at(join(dir, 'proj'), 'workspace', 'status');
  assert.equal(outside.json.error.code, 'ERR_NOT_FOUND');
  assert.match(outside.json.error.hint, /inside a Workspace/);
  assertStoreIntact(join(dir, 'proj/.layerfs/store.sqlite'));
});
