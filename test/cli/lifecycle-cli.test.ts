import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

test('the agent loop from the CLI: fork, workspace, exec, commit, log, diff, add, end', () => {
  const dir = tempDir();
  const env = { LAYERFS_CONTEXT: join(dir, 'ctx.json') };
  const store = join(dir, 'store.sqlite');
  const src = join(dir, 'proj');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'one\n');
  const ok = (args: string[]) => {
    const r = cli(['--json', ...args], env);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}${r.stdout}`);
    return r.json;
  };
  ok(['db', 'create', store]);
  ok(['context', 'use', '--store', store]);
  const layer = ok(['layerstack', 'init', '--name', 'proj', src]).layer.id;
  const fork = ok(['branch', 'fork', '--name', 'try-a', '--layer', layer.slice(0, 8)]);
  assert.equal(fork.branch.name, 'try-a');
  const at = join(dir, 'ws');
  const ws = ok(['workspace', 'create', 'try-a', '--at', at]).workspace;

  // exec: cwd in the Workspace, exit code returned.
  const ex = cli(['workspace', 'exec', ws.id, '--', 'sh', '-c', 'echo two >> a.txt; echo new > b.txt; exit 7'], env);
  assert.equal(ex.code, 7, ex.stderr);
  const status = ok(['workspace', 'status', at]);
  assert.deepEqual(status.changes.map((c: any) => `${c.change} ${c.path}`), ['modified a.txt', 'added b.txt']);

  // A detached execution makes commit Busy until it is stopped.
  const started = ok(['workspace', 'exec', '--detach', ws.id, '--', 'sh', '-c', 'echo started; sleep 60']);
  const busy = cli(['--json', 'workspace', 'commit', ws.id], env);
  assert.equal(busy.json.outcome, 'Busy');
  assert.equal(busy.code, 3);
  assert.equal(ok(['workspace', 'stop', started.execution.id]).outcome, 'Stopped');
  assert.match(ok(['workspace', 'output', started.execution.id]).output, /started/);

  const c1 = ok(['workspace', 'commit', ws.id]);
  assert.equal(c1.outcome, 'Created');
  assert.equal(ok(['workspace', 'commit', ws.id]).outcome, 'UpToDate');
  const log = ok(['log', 'try-a']).commits;
  assert.deepEqual(log.map((c: any) => c.id), [c1.commit.id]);
  assert.equal(cli(['cat', 'try-a', 'a.txt'], env).stdout, 'one\ntwo\n');

  const diff = ok(['branch', 'diff', '--branch', 'try-a', '--layer', layer]);
  assert.deepEqual(diff.entries.map((e: any) => `${e.change} ${e.path}`), ['modified a.txt', 'added b.txt']);

  const added = ok(['layerstack', 'add', 'try-a']);
  assert.equal(added.outcome, 'Added');
  assert.equal(ok(['layerstack', 'add', 'try-a']).outcome, 'UpToDate');
  const ld = ok(['layerstack', 'diff', '--from', layer, '--to', added.layer.id]);
  assert.equal(ld.entries.length, 2);
  assert.equal(ok(['query', 'branches']).branches.length, 1);
  assert.equal(ok(['query', 'commits', '--branch', 'try-a']).commits.length, 1);
  assert.equal(ok(['query', 'workspaces']).workspaces.length, 1);

  writeFileSync(join(at, 'dirty'), 'x');
  const dirty = cli(['--json', 'workspace', 'end', ws.id], env);
  assert.equal(dirty.json.outcome, 'Dirty');
  assert.equal(ok(['workspace', 'end', ws.id, '--discard']).outcome, 'Ended');
  assert.equal(existsSync(at), false);
  assert.equal(ok(['verify']).ok, true);
});
