// An ordinary user's FUSE Workspace from the CLI, end to end: uid 4242 makes a Store, creates a
// Workspace with --projection fuse (mounted by fusermount3, served by the kernel backend),
// writes through `workspace exec`, commits, and ends it; root reads the mount meanwhile
// (allow_other, as fuse.conf allows it in the namespace of user-mount.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliArgv } from '../helpers/cli.js';
import { assertStoreIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { run } from './helpers.js';
import { ORDINARY, ordinaryUserMachine } from './user-mount.js';

test('CLI as an ordinary user: workspace create --projection fuse, exec, commit, end (kernel backend through fusermount3)', { skip: process.getuid?.() !== 0 ? 'making the ordinary user its namespace needs root' : false }, async () => {
  const dir = tempDir('layerfs-user-cli-');
  chmodSync(dir, 0o755);
  const src = join(dir, 'proj');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'one\n');
  mkdirSync(join(dir, 'ns'));
  assert.equal((await run('chown', ['-R', `${ORDINARY.uid}:${ORDINARY.gid}`, dir])).code, 0);
  const machine = await ordinaryUserMachine(join(dir, 'ns'), ORDINARY);
  const store = join(dir, 'store.sqlite');
  const at = join(dir, 'ws');
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json'), LAYERFS_STORE: '' };
  const cli = async (args: string[]) => {
    const r = await machine.run(process.execPath, cliArgv(['--json', ...args]), ORDINARY, env);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return JSON.parse(r.stdout);
  };
  try {
    await cli(['db', 'create', store]);
    await cli(['context', 'use', '--store', store]);
    const layer = (await cli(['layerstack', 'init', '--name', 'proj', src])).layer.id;
    await cli(['branch', 'fork', '--name', 'try', '--layer', layer]);
    const ws = (await cli(['workspace', 'create', 'try', '--at', at, '--projection', 'fuse'])).workspace;
    assert.equal(ws.state, 'mounted');
    const info = (await machine.run('grep', [` ${at} `, '/proc/self/mountinfo'])).stdout;
    assert.match(info, / - fuse\.layerfs layerfs:\S+ rw,user_id=4242,group_id=4242,default_permissions,allow_other/);
    assert.match(info, /nosuid,nodev/);
    const ex = await machine.run(process.execPath, cliArgv(['workspace', 'exec', ws.id, '--', 'sh', '-c', 'echo two >> a.txt && echo new > b.txt && stat -c %u b.txt']), ORDINARY, env);
    assert.equal(ex.code, 0, ex.stderr);
    assert.match(ex.stdout, /^4242$/m);
    // root gets in (allow_other) and sees the user's change.
    assert.equal((await machine.run('cat', [join(at, 'a.txt')])).stdout, 'one\ntwo\n');
    assert.equal((await cli(['workspace', 'commit', ws.id])).outcome, 'Created');
    assert.equal((await cli(['workspace', 'end', ws.id])).outcome, 'Ended');
    assert.equal((await machine.run('grep', ['-c', ` ${at} `, '/proc/self/mountinfo'])).stdout.trim(), '0', 'the mount is gone');
  } finally {
    await machine.run(process.execPath, cliArgv(['daemon', 'stop', '--discard']), ORDINARY, env).catch(() => {});
    await machine.close();
  }
  assertStoreIntact(store);
});
