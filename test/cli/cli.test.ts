import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

test('the tour: create, context, init, query, ls, cat, export, verify (human and --json)', () => {
  const dir = tempDir();
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json') };
  const store = join(dir, 'store.sqlite');
  const src = join(dir, 'proj');
  mkdirSync(join(src, 'src'), { recursive: true });
  writeFileSync(join(src, 'src/index.ts'), 'export const x = 1;\n');
  writeFileSync(join(src, 'README'), 'hi\n');

  assert.match(cli(['--version']).stdout, /^layerfs \d+\.\d+\.\d+/);
  assert.match(cli(['--help']).stdout, /layerstack/);

  const created = cli(['--json', 'db', 'create', store], env);
  assert.equal(created.code, 0, created.stderr);
  assert.equal(created.json.outcome, 'Created');
  assert.equal(statSync(store).mode & 0o777, 0o600);
  assert.equal(cli(['--json', 'db', 'create', store], env).json.error.code, 'ERR_EXISTS');
  assert.equal(cli(['db', 'connect', store], env).code, 0);

  assert.equal(cli(['--json', 'ls', 'x'], env).json.error.code, 'ERR_NO_CONTEXT');
  assert.equal(cli(['context', 'use', '--store', store], env).code, 0);
  assert.equal(cli(['--json', 'context', 'show'], env).json.store, store);

  const init = cli(['--json', 'layerstack', 'init', '--name', 'demo', src], env);
  assert.equal(init.code, 0, init.stderr);
  assert.equal(init.json.outcome, 'Created');
  assert.equal(init.json.files, 2);
  assert.match(init.json.layer.id, /^[0-9a-f]{64}$/);
  const empty = cli(['--json', 'layerstack', 'init', '--name', 'blank', '--empty'], env);
  assert.equal(empty.code, 0, empty.stderr);

  const stacks = cli(['--json', 'query', 'layerstacks'], env).json.layerStacks;
  assert.deepEqual(stacks.map((s: any) => s.name), ['demo', 'blank']);
  const layers = cli(['--json', 'query', 'layers', '--layerstack', 'demo'], env).json.layers;
  assert.equal(layers.length, 1);
  const prefix = layers[0].id.slice(0, 10);

  const ls = cli(['--json', 'ls', prefix, 'src'], env);
  assert.deepEqual(ls.json.entries.map((e: any) => e.name), ['index.ts']);
  assert.match(cli(['ls', 'demo'], env).stdout, /README/);
  assert.equal(cli(['cat', 'demo', 'src/index.ts'], env).stdout, 'export const x = 1;\n');

  const out = join(dir, 'out');
  assert.equal(cli(['export', prefix, out], env).code, 0);
  assert.equal(readFileSync(join(out, 'src/index.ts'), 'utf8'), 'export const x = 1;\n');
  assert.equal(cli(['--json', 'export', prefix, out], env).json.error.code, 'ERR_NOT_EMPTY');

  const v = cli(['--json', 'verify'], env);
  assert.equal(v.code, 0, v.stderr);
  assert.equal(v.json.ok, true);
  assert.equal(v.json.states, 2);

  const bad = cli(['--json', 'layerstack', 'init', '--name', 'Bad Name', '--empty'], env);
  assert.equal(bad.code, 1);
  assert.equal(bad.json.error.code, 'ERR_INVALID_NAME');
  assert.equal(cli(['no-such-command'], env).code, 2);
});

test('db repack: human and --json, a bad level, content unchanged', () => {
  const dir = tempDir();
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json') };
  const store = join(dir, 'store.sqlite');
  const src = join(dir, 'proj');
  mkdirSync(src, { recursive: true });
  for (let i = 0; i < 40; i++) writeFileSync(join(src, `f${i}.txt`), `line ${i} of the repack test\n`.repeat(20 + i * 7));
  assert.equal(cli(['db', 'create', store], env).code, 0);
  assert.equal(cli(['--store', store, 'layerstack', 'init', '--name', 'demo', src], env).code, 0);

  const human = cli(['--store', store, 'db', 'repack', '--level', '3'], env);
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, /^repacked \d+ objects in [\d.]+ s \(level 3;/);
  assert.match(human.stdout, /Store [\d.]+ \w?i?B -> [\d.]+ \w?i?B/);
  const j = cli(['--json', '--store', store, 'db', 'repack'], env);
  assert.equal(j.code, 0, j.stderr);
  assert.equal(j.json.outcome, 'Repacked');
  assert.equal(j.json.level, 19);
  // Every object moved, or its row was kept as it was (rewritten it would have been larger).
  assert.ok(j.json.objects > 40 || j.json.rowsKept > 0, JSON.stringify(j.json));
  assert.ok(j.json.fileBytesAfter > 0 && j.json.fileBytesAfter <= j.json.fileBytesBefore);
  const bad = cli(['--json', '--store', store, 'db', 'repack', '--level', 'x'], env);
  assert.equal(bad.code, 1);
  assert.equal(bad.json.error.code, 'ERR_INVALID_ARGUMENT');
  assert.equal(cli(['--store', store, 'cat', 'demo', 'f7.txt'], env).stdout, 'line 7 of the repack test\n'.repeat(69));
  assert.equal(cli(['--json', '--store', store, 'verify'], env).json.ok, true);
});
