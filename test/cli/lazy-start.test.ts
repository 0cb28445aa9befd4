// `layerfs CMD` loads only CMD's module: the help, usage errors and commands of the lazily built
// program equal those of the whole tree, and `--version` or `cat` does not load what other
// commands need (lib/remote, lib/fuse, the MCP server…).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { buildProgram } from '../../lib/cli/main.js';
import { programFor } from '../../lib/cli/start.js';
import { GROUPS, groupFor } from '../../lib/cli/groups.js';
import { Client } from '../../lib/sdk/index.js';
import { cliArgv, repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

/** What commander prints and throws for `args`, with the program's output captured. */
async function parseCaptured(program: Command, args: string[]): Promise<string> {
  const out: string[] = [];
  const capture = (cmd: Command) => {
    cmd.exitOverride().configureOutput({ writeOut: (s) => out.push(`out:${s}`), writeErr: (s) => out.push(`err:${s}`), outputError: (s) => out.push(`error:${s}`) });
    for (const sub of cmd.commands) capture(sub);
  };
  capture(program);
  try {
    await program.parseAsync(['node', 'layerfs', ...args]);
    out.push('parsed');
  } catch (e) {
    if (!(e instanceof CommanderError)) throw e;
    out.push(`exit ${e.exitCode} ${e.code}`);
  }
  return out.join('');
}

test('the table lists every top-level command of every group, in help order', () => {
  const whole = buildProgram({ code: 0 });
  const listed = Object.values(GROUPS).flatMap((g) => g.commands.map((c) => c.spec.split(' ', 1)[0]));
  assert.deepEqual(
    whole.commands.map((c) => c.name()),
    listed,
  );
  for (const name of listed) assert.equal(groupFor([name!]) !== undefined, true, name);
});

test('--help, help CMD, CMD --help and usage errors are those of the whole tree', async () => {
  const cases = [
    [],
    ['--help'],
    ['help'],
    ['-h', 'cat'],
    ['help', 'cat'],
    ['--json', 'help', 'workspace'],
    ['help', 'workspace', 'create'],
    ['cat', '--help'],
    ['workspace', 'create', '--help'],
    ['remote', '--help'],
    ['push', '--help'],
    ['checkpoints', '--help'],
    ['catt', 'x', 'y'],
    ['cat'],
    ['cat', 'a'],
    ['--bogus', 'cat'],
    ['cat', '--bogus', 'a', 'b'],
    ['workspace', 'creat'],
    ['--store', 'cat', 'ls', '--help'],
    ['--store=x', '-q', 'log', '--help'],
    ['--', 'cat', '--help'],
    ['-qV'],
    ['--version'],
  ];
  for (const args of cases) {
    const lazy = await parseCaptured(await programFor(args, { code: 0 }), args);
    const whole = await parseCaptured(buildProgram({ code: 0 }), args);
    assert.equal(lazy, whole, `layerfs ${args.join(' ')}`);
  }
  // The top-level help names every group.
  const help = await parseCaptured(await programFor(['--help'], { code: 0 }), ['--help']);
  for (const g of Object.values(GROUPS)) for (const c of g.commands) assert.ok(help.includes(`\n  ${c.spec.split(' ', 1)[0]} `), c.spec);
});

test('groupFor: the group of the command named, after the program options', () => {
  assert.equal(groupFor(['cat', 'demo', 'a']), 'cat');
  assert.equal(groupFor(['--json', '--store', 'cat', 'push', 'x']), 'remote');
  assert.equal(groupFor(['--store=s.sqlite', '-q', 'checkpoint', 'b', 'n']), 'rewind');
  assert.equal(groupFor(['help', '--json', 'unpin']), 'pin');
  assert.equal(groupFor(['--version']), undefined);
  assert.equal(groupFor(['--help', 'cat']), undefined);
  assert.equal(groupFor(['nosuch']), undefined);
  assert.equal(groupFor(['-qV']), 'all');
  assert.equal(groupFor(['--', 'grep', 'x', 'y']), 'grep');
});

/** The modules `layerfs ARGS` loads (run from sources), relative to the repository (lib/…, node_modules/…). */
function loaded(args: string[], env: Record<string, string> = {}): { modules: string[]; stdout: string; code: number | null } {
  const trace = join(tempDir(), 'trace');
  writeFileSync(trace, '');
  const hook = join(repoRoot, 'test/helpers/load-trace.mjs');
  const [, tsx, ...rest] = cliArgv(args);
  const r = spawnSync(process.execPath, ['--import', tsx!, '--import', hook, ...rest], { env: { ...process.env, LAYERFS_STORE: '', ...env, LAYERFS_LOAD_TRACE: trace }, encoding: 'utf8' });
  const root = new URL('../../', import.meta.url).href;
  const modules = readFileSync(trace, 'utf8').split('\n').filter((u) => u.startsWith(root)).map((u) => u.slice(root.length));
  return { modules, stdout: r.stdout, code: r.status };
}

test('--version and --help load no SDK; cat, ls, query layers and log load only the read path', async () => {
  const version = loaded(['--version']);
  assert.match(version.stdout, /^layerfs \d+\.\d+\.\d+/);
  assert.ok(version.modules.includes('lib/cli/start.ts'), 'the trace sees the CLI load (else the checks below prove nothing)');
  const ours = (m: string[]) => m.filter((x) => x.startsWith('lib/'));
  assert.deepEqual(ours(version.modules).filter((m) => !m.startsWith('lib/cli/') && m !== 'lib/sdk/errors.ts' && m !== 'lib/errors.ts'), []);
  assert.deepEqual(ours(version.modules).filter((m) => m.startsWith('lib/cli/commands/')), []);
  assert.deepEqual(ours(loaded(['--help']).modules).filter((m) => m.startsWith('lib/cli/commands/') || !/^lib\/(cli\/|sdk\/errors|errors)/.test(m)), []);

  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  writeFileSync(join(src, 'a.txt'), 'hello\n');
  const store = join(dir, 'store.sqlite');
  const c = Client.create(store);
  await c.initLayerStack({ name: 'demo', source: src });
  c.forkBranch({ name: 'dev', layer: 'demo' });
  c.close();
  const cat = loaded(['--store', store, 'cat', 'demo', 'a.txt']);
  assert.equal(cat.code, 0);
  assert.equal(cat.stdout, 'hello\n');
  assert.ok(cat.modules.includes('lib/cli/commands/cat.ts') && cat.modules.includes('lib/store/store-read.ts'), cat.modules.join(' '));
  const heavy = cat.modules.filter(
    (m) =>
      /^lib\/(remote\/(index|connection)|sdk\/remote-transfer|cli\/mcp\/)/.test(m) ||
      /^node_modules\/(pg|pg-copy-streams|zod|@modelcontextprotocol)\//.test(m) ||
      (m.startsWith('lib/cli/commands/') && m !== 'lib/cli/commands/cat.ts'),
  );
  assert.deepEqual(heavy, []);
  // A plain cat command line is read without commander (plain-cat.ts).
  assert.deepEqual(cat.modules.filter((m) => m.startsWith('node_modules/commander/')), []);
  // The read path only: no Workspace, FUSE, remote or diff code, and no Client (sdk/client*.ts).
  // Nor the Store's writer side (store.ts: object writer, groups, deltas, dictionary training,
  // checkpointer): a read-only process opens the read side (store-read.ts) alone.
  const readPath = (m: string[]) =>
    m.filter((x) =>
      /^lib\/(fuse|workspace|remote)\/|^lib\/history\/(diff|reconcile|git-patch|add)|^lib\/store\/(import\/|gc|repack|export|store\.ts|objects\.ts|object-writer|object-groups|object-deltas|dictionary(-training)?\.ts|writer-statements|checkpointer)|^lib\/native\/zstd-train|^lib\/sdk\/(index|client)/.test(x),
    );
  assert.deepEqual(readPath(cat.modules), []);
  const ls = loaded(['--store', store, 'ls', 'demo']);
  assert.equal(ls.code, 0);
  assert.match(ls.stdout, / a\.txt\n$/);
  assert.deepEqual(readPath(ls.modules), []);
  const layers = loaded(['--store', store, '--json', 'query', 'layers']);
  assert.equal(layers.code, 0);
  assert.equal(JSON.parse(layers.stdout).layers[0].layerStack, 'demo');
  assert.deepEqual(readPath(layers.modules), []);
  // log without a path is on the Reader too (with a path it needs the Client's diff).
  const log = loaded(['--store', store, '--json', 'log', 'dev']);
  assert.equal(log.code, 0);
  assert.deepEqual(JSON.parse(log.stdout).commits, []);
  assert.deepEqual(readPath(log.modules), []);
});
