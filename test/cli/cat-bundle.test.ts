// The compiled CLI's plain `cat` runs from one bundled file (scripts/bundle-cat.mjs, part of
// `npm run build:ts`): compiled here into a directory of its own, it loads no other module of
// ours than the bin's start, and answers exactly as the CLI run from sources: the bytes, a
// missing path (--json and human), a range, and a damaged chunk (ERR_CORRUPT, exit 1, only the
// verified bytes before it written).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { chunkAndHash } from '../../lib/native/index.js';
import { Client } from '../../lib/sdk/index.js';
import { cli, repoRoot } from '../helpers/cli.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

const SEED = 31;

/** A package root with this checkout's dependencies and addon, and dist/ compiled and bundled into it. */
function compiled(): string {
  const pkg = join(tempDir('layerfs-bundle-'), 'pkg');
  mkdirSync(pkg);
  for (const f of ['package.json', 'bin']) cpSync(join(repoRoot, f), join(pkg, f), { recursive: true });
  for (const f of ['node_modules', 'build']) symlinkSync(join(repoRoot, f), join(pkg, f));
  const run = (args: string[]) => {
    const r = spawnSync(process.execPath, args, { cwd: repoRoot, encoding: 'utf8' });
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
  };
  run([join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', join(pkg, 'dist')]);
  run([join(repoRoot, 'scripts/bundle-cat.mjs'), join(pkg, 'dist')]);
  return pkg;
}

test(`the compiled plain cat is one bundled module and answers as the CLI from sources (seed ${SEED})`, { timeout: 300_000 }, async () => {
  const pkg = compiled();
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  const data = seededBytes(SEED, 3 * 1024 * 1024 + 5);
  writeFileSync(join(src, 'random.bin'), data);
  writeFileSync(join(src, 'a.txt'), 'hello\n');
  const store = join(dir, 'store.sqlite');
  const c = Client.create(store);
  await c.initLayerStack({ name: 'demo', source: src });
  c.close();

  const trace = join(dir, 'trace');
  const hook = join(repoRoot, 'test/helpers/load-trace.mjs');
  const compiledCat = (args: string[]) => {
    writeFileSync(trace, '');
    const r = spawnSync(process.execPath, ['--import', hook, join(pkg, 'bin/layerfs.js'), '--store', store, ...args], { cwd: dir, env: { ...process.env, LAYERFS_STORE: '', LAYERFS_LOAD_TRACE: trace }, maxBuffer: 64 * 1024 * 1024 });
    const ours = readFileSync(trace, 'utf8')
      .split('\n')
      .filter((u) => u.startsWith(`file://${pkg}/dist/`))
      .map((u) => u.slice(`file://${pkg}/dist/`.length));
    return { code: r.status, stdout: r.stdout, stderr: r.stderr.toString(), ours };
  };

  const whole = compiledCat(['cat', 'demo', 'random.bin']);
  assert.equal(whole.code, 0, whole.stderr);
  assert.ok(whole.stdout.equals(data));
  assert.deepEqual(whole.ours.sort(), ['lib/cli/groups.js', 'lib/cli/plain-cat-entry.js', 'lib/cli/plain-cat.js', 'lib/cli/start.js']);
  const range = compiledCat(['cat', '--offset', '1000003', '--length', '77', 'demo', 'random.bin']);
  assert.ok(range.stdout.equals(data.subarray(1_000_003, 1_000_080)));

  // Errors come out of the bundle's own error classes exactly as from the unbundled modules.
  for (const args of [['--json', 'cat', 'demo', 'nope.txt'], ['cat', 'demo', 'nope.txt'], ['cat', 'nosuch', 'a.txt']]) {
    const got = compiledCat(args);
    const want = cli(['--store', store, ...args]);
    assert.deepEqual([got.code, got.stdout.toString(), got.stderr], [want.code, want.stdout, want.stderr], args.join(' '));
    assert.notEqual(got.code, 0);
  }

  // A damaged chunk: the bytes before it, then ERR_CORRUPT and exit 1.
  const chunks = chunkAndHash(data);
  const m = chunks.length >> 1;
  const before = chunks.slice(0, m).reduce((a, ch) => a + ch.length, 0);
  const db = new Database(store);
  try {
    const loc = db.prepare('SELECT pack, offset, length FROM objects WHERE id = ?').get(chunks[m]!.id) as { pack: number; offset: number; length: number };
    const row = Buffer.from(db.prepare('SELECT data FROM packs WHERE id = ?').pluck().get(loc.pack) as Buffer);
    row[loc.offset + (loc.length >> 1)]! ^= 0x10;
    db.prepare('UPDATE packs SET data = ? WHERE id = ?').run(row, loc.pack);
  } finally {
    db.close();
  }
  const damaged = compiledCat(['cat', 'demo', 'random.bin']);
  assert.equal(damaged.code, 1);
  assert.match(damaged.stderr, /\[ERR_CORRUPT\]/);
  assert.ok(damaged.stdout.length <= before && damaged.stdout.equals(data.subarray(0, damaged.stdout.length)));
});
