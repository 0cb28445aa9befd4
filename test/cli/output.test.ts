// Output that behaves in a terminal and in a pipe: quiet EPIPE, quoted names, JSON errors for
// usage, base64 name bytes, counts that agree, hints that say what to do next.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, cliArgv } from '../helpers/cli.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { assertStoreIntact } from '../helpers/integrity.js';

function setup() {
  const dir = tempDir();
  const store = join(dir, 'store.sqlite');
  const env = { LAYERFS_STORE: store, LAYERFS_CONTEXT: join(dir, 'ctx.json'), LAYERFS_PROJECTION: 'materialize' };
  assert.equal(cli(['db', 'create', store], env).code, 0);
  return { dir, store, env, run: (...args: string[]) => cli(args, env) };
}

test('a closed pipe ends cat and --json ls quietly', () => {
  const { dir, store, env } = setup();
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src/big.bin'), seededBytes(1, 4 * 1024 * 1024));
  for (let i = 0; i < 3000; i++) writeFileSync(join(dir, 'src', `f${i}`), '');
  assert.equal(cli(['layerstack', 'init', '--name', 'demo', join(dir, 'src')], env).code, 0);
  const cmd = cliArgv([]).map((a) => `'${a}'`).join(' ');
  for (const args of ['cat demo big.bin', '--json ls demo']) {
    const r = spawnSync('bash', ['-c', `set -o pipefail; ${JSON.stringify(process.execPath)} ${cmd} ${args} | head -c 100 >/dev/null; echo "status=\${PIPESTATUS[0]}"`], { env: { ...process.env, ...env }, encoding: 'utf8' });
    assert.match(r.stdout, /status=0/, `${args}: ${r.stdout}`);
    assert.equal(r.stderr, '', `${args}: nothing on stderr`);
  }
  assertStoreIntact(store);
});

test('names are quoted in text output (ESC, newline), exact in JSON as base64', () => {
  const { dir, run } = setup();
  mkdirSync(join(dir, 'src'));
  const evil = 'red\x1b[31m\nsplit';
  writeFileSync(join(dir, 'src', evil), 'x');
  writeFileSync(join(dir, 'src', 'plain.txt'), 'p');
  assert.equal(run('layerstack', 'init', '--name', 'demo', join(dir, 'src')).code, 0);
  const ls = run('ls', 'demo');
  assert.ok(!ls.stdout.includes('\x1b'), 'no ESC reaches the terminal');
  assert.equal(ls.stdout.trim().split('\n').length, 2, 'one line per entry');
  assert.match(ls.stdout, /"red\\033\[31m\\nsplit"$/m);
  assert.match(ls.stdout, / plain\.txt$/m);
  assert.match(ls.stdout, / \d{4}-\d\d-\d\d \d\d:\d\d /, 'ls shows the mtime');
  const json = run('--json', 'ls', 'demo').json;
  const e = json.entries.find((x: { name: string }) => x.name === evil);
  assert.equal(typeof e.nameBytes, 'string');
  assert.equal(Buffer.from(e.nameBytes, 'base64').toString(), evil);

  // In a Workspace's status and in a diff too; diff JSON carries pathBytes as base64.
  assert.equal(run('branch', 'fork', '--name', 'b', '--layer', 'demo#0').code, 0);
  const ws = run('--json', 'workspace', 'create', 'b', '--at', join(dir, 'ws')).json.workspace;
  writeFileSync(join(dir, 'ws', `${evil}2`), 'y');
  const status = run('workspace', 'status', ws.id);
  assert.ok(!status.stdout.includes('\x1b'));
  assert.match(status.stdout, /^A\t"red\\033\[31m\\nsplit2"$/m);
  assert.equal(run('workspace', 'commit', ws.id).code, 0);
  const diff = run('--json', 'branch', 'diff', '--branch', 'b', '--layer', 'demo#0').json;
  const added = diff.entries.find((x: { change: string }) => x.change === 'added');
  assert.equal(Buffer.from(added.pathBytes, 'base64').toString(), `${evil}2`);
  assert.match(run('layerstack', 'diff', '--from', 'demo#0', '--to', 'b').stdout, /^A\t"red/m);
  assert.equal(run('workspace', 'end', ws.id).code, 0);
});

test('with --json, usage errors are the JSON error (exit 2)', () => {
  const { run } = setup();
  for (const args of [['--json', 'nosuchcmd'], ['--json', 'ls'], ['--json', 'ls', 'x', '--bogus']]) {
    const r = run(...args);
    assert.equal(r.code, 2, args.join(' '));
    assert.equal(r.json?.error?.code, 'ERR_USAGE', `${args.join(' ')}: ${r.stdout}`);
    assert.ok(r.json.error.message.length > 0);
  }
  assert.equal(run('nosuchcmd').code, 2);
});

test('counts agree: the root counts once, export counts what import counted, special files are named', () => {
  const { dir, run } = setup();
  mkdirSync(join(dir, 'empty'));
  const empty = run('--json', 'layerstack', 'init', '--name', 'e', join(dir, 'empty')).json;
  assert.equal(empty.directories, 1);
  assert.equal(run('--json', 'layerstack', 'init', '--name', 'f', '--empty').json.directories, 1);
  mkdirSync(join(dir, 'tree'));
  for (let i = 0; i < 40; i++) mkdirSync(join(dir, 'tree', `d${i}`, 'sub'), { recursive: true });
  spawnSync('mkfifo', [join(dir, 'tree/pipe')]);
  const init = run('--json', 'layerstack', 'init', '--name', 't', join(dir, 'tree')).json;
  assert.equal(init.directories, 81);
  assert.equal(init.specials, 1);
  const out = run('--json', 'export', 't', join(dir, 'out')).json;
  assert.equal(out.directories, 81);
  assert.equal(out.specials, 1);
  assert.match(run('export', 't', join(dir, 'out2')).stdout, /81 directories, 0 symlinks, 1 special file\b/);
});

test('text hints: a LayerStack name given to log, labels where a state is expected, HEAD_MOVED, ls sizes', () => {
  const { dir, store, run } = setup();
  mkdirSync(join(dir, 'src/sub'), { recursive: true });
  writeFileSync(join(dir, 'src/a.txt'), 'a'.repeat(3000));
  assert.equal(run('layerstack', 'init', '--name', 'demo', join(dir, 'src')).code, 0);
  const log = run('--json', 'log', 'demo');
  assert.equal(log.json.error.code, 'ERR_NOT_FOUND');
  assert.match(log.json.error.hint, /demo is a LayerStack/);
  assert.match(run('log', 'demo').stderr, /query layers --layerstack demo/);

  assert.equal(run('--json', 'ls', 'demo#0').code, 0);
  assert.equal(run('--json', 'layerstack', 'diff', '--from', 'demo#0', '--to', 'demo').json.entries.length, 0);
  assert.equal(run('--json', 'ls', 'demo#7').json.error.code, 'ERR_NOT_FOUND');
  const ls = run('ls', '-H', 'demo').stdout;
  assert.match(ls, /^d.* - \d{4}-.* sub$/m, 'a directory shows - as its size');
  assert.match(ls, /2\.9 KiB .* a\.txt$/m);

  // Two Workspaces of one Branch: the second, strict commit finds the head moved and says what to do.
  assert.equal(run('branch', 'fork', '--name', 'b', '--layer', 'demo').code, 0);
  const w1 = run('--json', 'workspace', 'create', 'b', '--at', join(dir, 'w1')).json.workspace;
  const w2 = run('--json', 'workspace', 'create', 'b', '--at', join(dir, 'w2')).json.workspace;
  writeFileSync(join(dir, 'w1/x'), '1');
  writeFileSync(join(dir, 'w2/y'), '2');
  assert.equal(run('workspace', 'commit', w1.id).code, 0);
  const moved = run('workspace', 'commit', w2.id, '--strict');
  assert.equal(moved.code, 3);
  assert.match(moved.stdout, /^HEAD_MOVED .*nothing was committed/m);
  assert.match(moved.stdout, /next: .*workspace create b --at/);
  const dirty = run('workspace', 'end', w2.id);
  assert.equal(dirty.code, 3);
  assert.match(dirty.stdout, /DIRTY 1 uncommitted change;/);
  assert.match(dirty.stdout, /next: /);
  for (const w of [w1, w2]) assert.equal(run('workspace', 'end', w.id, '--discard').code, 0);
  assert.doesNotMatch(run('monitor', 'snapshot').stdout, /\+-/);
  assertStoreIntact(store);
});
