// Progress bars: on a terminal only (run under script(1) for a pseudo-terminal), never with
// --quiet or --json, never into a pipe.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, cliArgv } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { assertStoreIntact } from '../helpers/integrity.js';

test('export, verify, a materialized create and end show bars on a terminal, not with --quiet or in a pipe', () => {
  const dir = tempDir();
  const store = join(dir, 'store.sqlite');
  const env = { ...process.env, LAYERFS_STORE: store, LAYERFS_CONTEXT: join(dir, 'ctx.json'), LAYERFS_PROJECTION: 'materialize', LAYERFS_PROGRESS_AFTER_MS: '0' };
  mkdirSync(join(dir, 'src'));
  for (let i = 0; i < 600; i++) writeFileSync(join(dir, 'src', `f${i}`), `${i}\n`.repeat(100));
  assert.equal(cli(['db', 'create', store], env).code, 0);
  assert.equal(cli(['layerstack', 'init', '--name', 's', join(dir, 'src')], env).code, 0);
  assert.equal(cli(['branch', 'fork', '--name', 'b', '--layer', 's#0'], env).code, 0);
  const cmd = (args: string) => `${JSON.stringify(process.execPath)} ${cliArgv([]).map((a) => `'${a}'`).join(' ')} ${args}`;
  const onTty = (args: string) => spawnSync('script', ['-qec', cmd(args), '/dev/null'], { cwd: dir, env, encoding: 'utf8' });
  const piped = (args: string) => spawnSync('bash', ['-c', `${cmd(args)} 2>&1 | cat`], { cwd: dir, env, encoding: 'utf8' });

  const checks: [string, RegExp][] = [
    ['export s out1', /export \[.*\] \d+% \| .* of .* \| \d+\/601 entries/],
    ['verify', /verify \[.*\] \d+% \| \d+\/\d+ objects/],
    ['workspace create b --at ws1', /create: writing files \[/],
    ['workspace end ws1', /end: removing \[.*600\/600 top-level entries/],
  ];
  for (const [args, bar] of checks) {
    const r = onTty(args);
    assert.equal(r.status, 0, `${args}: ${r.stdout}`);
    assert.match(r.stdout, bar, args);
  }
  const quietRuns: [string, string][] = [['--quiet export s out2', 'export ['], ['--quiet verify', 'verify ['], ['--json export s out3', 'export [']];
  for (const [args, quiet] of quietRuns) {
    const r = onTty(args);
    assert.equal(r.status, 0, r.stdout);
    assert.ok(!r.stdout.includes(quiet), `${args}: ${r.stdout}`);
  }
  const p = piped('export s out4');
  assert.equal(p.status, 0);
  assert.ok(!p.stdout.includes('export ['), 'no bar into a pipe');
  assert.match(p.stdout, /^exported 600 files, 1 directory/m);
  assertStoreIntact(store);
});
