import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import { assertStoreIntact } from '../helpers/integrity.js';

test('sandbox create/status/stop/remove and workspace create --sandbox from the CLI; exec reports OutOfMemory and resources', () => {
  const dir = tempDir('layerfs-sandbox-cli-');
  chmodSync(dir, 0o755);
  const store = join(dir, 'store.sqlite');
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json') };
  const src = join(dir, 'proj');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'one\n');
  const run = (args: string[]) => cli(['--json', '--store', store, ...args], env);
  const ok = (args: string[]) => {
    const r = run(args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.json;
  };
  ok(['db', 'create', store]);
  ok(['layerstack', 'init', '--name', 'proj', src]);
  ok(['branch', 'fork', '--name', 'b', '--layer', 'proj']);

  const bad = run(['sandbox', 'create', 'x', '--memory-mib', 'lots']);
  assert.notEqual(bad.code, 0);
  assert.equal(bad.json.error.code, 'ERR_INVALID_ARGUMENT');

  const created = ok(['sandbox', 'create', 'agent1', '--memory-mib', '96', '--cpus', '1.5', '--pids-limit', '64', '--ro', src]);
  assert.equal(created.outcome, 'Created');
  assert.deepEqual(created.sandbox.profile, { memoryMib: 96, cpus: 1.5, pidsLimit: 64, diskMib: null, network: 'none', ro: [src], rw: [] });
  const ws = ok(['workspace', 'create', 'b', '--at', join(dir, 'ws'), '--projection', 'materialize', '--sandbox', 'agent1']).workspace;
  assert.equal(ws.sandbox, 'agent1');

  const fine = run(['workspace', 'exec', ws.id, '--', 'sh', '-c', `cat ${src}/a.txt > copy.txt; exit 4`]);
  assert.equal(fine.code, 4, fine.stderr);
  assert.ok(existsSync(join(ws.path, 'copy.txt')));
  const hog = run(['workspace', 'exec', ws.id, '--', '/usr/bin/python3', '-c', 'a = []\nwhile True: a.append(bytearray(1 << 20))']);
  assert.equal(hog.json.outcome, 'OutOfMemory');
  assert.ok(hog.json.execution.resources.peakMemoryBytes > 0);

  const st = ok(['sandbox', 'status', 'agent1']);
  assert.equal(st.state, 'ready');
  assert.deepEqual(st.workspaces, [ws.id]);
  assert.equal(ok(['sandbox', 'stop', 'agent1']).outcome, 'Stopped');
  assert.equal(ok(['sandbox', 'status']).sandboxes[0].state, 'stopped');
  const busy = run(['sandbox', 'remove', 'agent1']);
  assert.equal(busy.json.error.code, 'ERR_BUSY');
  ok(['workspace', 'end', ws.id, '--discard']);
  assert.equal(ok(['sandbox', 'remove', 'agent1']).outcome, 'Removed');
  assert.deepEqual(ok(['sandbox', 'status']).sandboxes, []);
  assertStoreIntact(store);
});
