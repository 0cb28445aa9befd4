/** The reconciling commit from the CLI: commit onto a moved head, conflicts, resolve, update, --strict. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';

test('workspace commit reconciles; conflicts, resolve, update and --strict', () => {
  const dir = tempDir();
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json') };
  const store = join(dir, 'store.sqlite');
  const src = join(dir, 'proj');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'one\ntwo\nthree\nfour\nfive\n');
  const run = (args: string[]) => cli(['--json', ...args], env);
  const ok = (args: string[]) => {
    const r = run(args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.json;
  };
  ok(['db', 'create', store]);
  ok(['context', 'use', '--store', store]);
  const layer = ok(['layerstack', 'init', '--name', 'proj', src]).layer.id;
  ok(['branch', 'fork', '--name', 'b', '--layer', layer]);
  const w1 = ok(['workspace', 'create', 'b', '--at', join(dir, 'w1'), '--projection', 'materialize']).workspace;
  const w2 = ok(['workspace', 'create', 'b', '--at', join(dir, 'w2'), '--projection', 'materialize']).workspace;

  writeFileSync(join(w1.path, 'a.txt'), 'ONE\ntwo\nthree\nfour\nfive\n');
  writeFileSync(join(w2.path, 'a.txt'), 'one\ntwo\nthree\nfour\nFIVE\n');
  assert.equal(ok(['workspace', 'commit', w1.id, '-m', 'first']).outcome, 'Created');
  const strict = run(['workspace', 'commit', w2.id, '--strict']);
  assert.equal(strict.code, 3);
  assert.equal(strict.json.outcome, 'HeadMoved');
  const human = cli(['workspace', 'commit', w2.id, '-m', 'second'], env);
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, /^CREATED commit /);
  assert.match(human.stdout, /RECONCILED with the moved head: 1 merged path\(s\), 0 retries/);
  assert.match(human.stdout, /merged a\.txt/);
  assert.equal(cli(['cat', 'b', 'a.txt'], env).stdout, 'ONE\ntwo\nthree\nfour\nFIVE\n');

  // w1 is clean and behind: update.
  const u = ok(['workspace', 'update', w1.id]);
  assert.equal(u.outcome, 'Updated');
  assert.equal(readFileSync(join(w1.path, 'a.txt'), 'utf8'), 'ONE\ntwo\nthree\nfour\nFIVE\n');

  // Both change line 3: Conflicted (exit 3), listed, resolved with the working tree.
  writeFileSync(join(w1.path, 'a.txt'), 'ONE\ntwo\nw1\nfour\nFIVE\n');
  writeFileSync(join(w2.path, 'a.txt'), 'ONE\ntwo\nw2\nfour\nFIVE\n');
  assert.equal(ok(['workspace', 'commit', w2.id]).outcome, 'Created');
  const c = run(['workspace', 'commit', w1.id]);
  assert.equal(c.code, 3);
  assert.equal(c.json.outcome, 'Conflicted');
  const list = ok(['workspace', 'conflicts', w1.id]).conflicts;
  assert.deepEqual(list.map((x: { id: number; kind: string; path: string }) => [x.id, x.kind, x.path]), [[1, 'text', 'a.txt']]);
  assert.match(cli(['workspace', 'conflicts', w1.id], env).stdout, /lines base 3-3, head 3-3, workspace 3-3/);
  const bad = run(['workspace', 'resolve', w1.id, '1']);
  assert.equal(bad.code, 1);
  assert.equal(run(['workspace', 'resolve', w1.id, '9', '--branch']).code, 1);
  assert.equal(ok(['workspace', 'resolve', w1.id, '1', '--working-tree']).outcome, 'Resolved');
  assert.equal(ok(['workspace', 'commit', w1.id]).outcome, 'Created');
  assert.equal(cli(['cat', 'b', 'a.txt'], env).stdout, 'ONE\ntwo\nw1\nfour\nFIVE\n');
  assert.deepEqual(ok(['workspace', 'conflicts', w1.id]).conflicts, []);
  assert.deepEqual(ok(['log', 'b']).commits.length, 4);
  assertStoreIntact(store);
});
