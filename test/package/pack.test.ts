/**
 * The published package in someone else's project, as CI checks it: `npm pack` (which builds the
 * prebuilt addon and carries the C sources a fallback build needs), then a fresh project outside
 * this repository (NODE_PATH unset, the npm cache preferred) installs the tarball and uses it:
 * the CLI tour, an ESM and a CommonJS script through the SDK, and a TypeScript consumer
 * type-checked with skipLibCheck false. Nothing compiles for layerfs, npm reports no install
 * script left to review and no unmet dependency, and the tarball stays under 2 MB.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/tmp.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const MAX_TARBALL = 2 * 1024 * 1024;

test('the packed tarball installs and works in a fresh project: CLI tour, ESM, CommonJS, TypeScript (skipLibCheck false)', { timeout: 840_000 }, () => {
  const dir = tempDir('layerfs-pack-');
  const { NODE_PATH: _unset, ...baseEnv } = process.env;
  const env = { ...baseEnv, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
  const run = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env });
  // Pack from a copy: prepack rebuilds the addon, which must not replace the build/ that the
  // other test files are loading at the same time.
  const copy = join(dir, 'checkout');
  for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'CMakeLists.txt', 'gyp', 'README.md', 'CHANGELOG.md', 'bin', 'lib', 'native', 'scripts', 'docs']) {
    cpSync(join(root, entry), join(copy, entry), { recursive: true });
  }
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
  // prepack's build output shares stdout with npm's JSON, which comes last.
  const packOut = run('npm', ['pack', '--json', '--pack-destination', dir], copy);
  const packed = JSON.parse(packOut.slice(packOut.startsWith('[') ? 0 : packOut.lastIndexOf('\n[') + 1)) as { filename: string; size: number; files: { path: string }[] }[];
  const files = packed[0]!.files.map((f) => f.path);
  const tarball = join(dir, packed[0]!.filename);
  console.log(`# tarball ${statSync(tarball).size} bytes, ${files.length} files`);
  assert.ok(statSync(tarball).size < MAX_TARBALL, `tarball is ${statSync(tarball).size} bytes`);
  assert.ok(files.some((f) => /^prebuilds\/linux-x64\/.+\.node$/.test(f)), 'tarball has prebuilds/linux-x64/*.node');
  assert.ok(files.includes('dist/lib/sdk/index.js') && files.includes('dist/lib/sdk/index.d.ts') && files.includes('bin/layerfs.js'));
  for (const f of ['deps/zstd/lib/zstd.h', 'deps/zstd/LICENSE', 'deps/blake3/blake3.c', 'deps/blake3/NOTICE', 'CMakeLists.txt', 'scripts/c-sources.cjs']) assert.ok(files.includes(f), `the fallback build needs ${f}`);
  assert.ok(!files.some((f) => f.startsWith('build/')), 'no local build/ in the tarball');
  assert.ok(!files.some((f) => f.endsWith('.map')), 'no source maps pointing at sources that are not shipped');
  assert.ok(!files.includes('scripts/setup.sh') && !files.some((f) => f.endsWith('binding.gyp')), 'the set-up script stays in the repository; no binding.gyp to make npm run node-gyp');
  assert.ok(!existsSync(join(copy, 'deps')), 'postpack removes the copied sources');

  // A consumer project outside the repository.
  const project = join(dir, 'project');
  mkdirSync(project);
  const tsVersion = (JSON.parse(run(process.execPath, ['-p', 'JSON.stringify(require("typescript/package.json"))'], root)) as { version: string }).version;
  const nodeTypes = (JSON.parse(run(process.execPath, ['-p', 'JSON.stringify(require("@types/node/package.json"))'], root)) as { version: string }).version;
  // better-sqlite3's own install script would compile it (its prebuilt binaries cannot be
  // fetched here); the consumer denies it and borrows this checkout's binary instead.
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, allowScripts: { 'better-sqlite3': false } }));
  const install = spawnSync('npm', ['install', '--prefer-offline', tarball, `typescript@${tsVersion}`, `@types/node@${nodeTypes}`], { cwd: project, env, encoding: 'utf8' });
  assert.equal(install.status, 0, install.stderr);
  assert.doesNotMatch(install.stderr, /not yet covered by allowScripts/, install.stderr);
  cpSync(join(root, 'node_modules/better-sqlite3/build'), join(project, 'node_modules/better-sqlite3/build'), { recursive: true });
  const ls = spawnSync('npm', ['ls', '--all'], { cwd: project, env, encoding: 'utf8' });
  assert.equal(ls.status, 0, ls.stdout + ls.stderr);
  // Every dependency is met. Optional peers (layerfs's node-pty, pg's pg-native, the MCP SDK's
  // JSON-schema validator) are left to the consumer by design and show as UNMET OPTIONAL; none
  // of layerfs's own build dependencies may appear at all.
  assert.doesNotMatch(ls.stdout, /UNMET DEPENDENCY|zstd-napi|blake3-native/);
  const pkgDir = join(project, 'node_modules/layerfs');
  assert.ok(!existsSync(join(pkgDir, 'build')), 'install compiled instead of using the prebuilt addon');
  assert.ok(readdirSync(join(pkgDir, 'prebuilds/linux-x64')).some((f) => f.endsWith('.node')));

  // The CLI tour, as the README's first command runs it.
  const tour = run('npx', ['--no-install', 'layerfs', 'tour'], project);
  assert.match(tour, /Layer #0/);
  assert.match(tour, /8\. Add/);
  assert.ok(existsSync(join(project, '.layerfs/store.sqlite')));

  const esm = `
    import { Client, nativeInfo } from 'layerfs';
    import { mkdirSync, writeFileSync } from 'node:fs';
    mkdirSync('src-esm'); writeFileSync('src-esm/a.txt', 'packed and working');
    const c = Client.create('esm/store.sqlite');
    const r = await c.initLayerStack({ name: 'p', source: 'src-esm' });
    console.log(JSON.stringify({ text: c.cat('p', 'a.txt').toString(), ok: c.verify().ok, simd: nativeInfo().simd, files: r.files }));
    c.close();`;
  writeFileSync(join(project, 'check.mjs'), esm);
  const out = JSON.parse(run(process.execPath, ['check.mjs'], project));
  assert.deepEqual([out.text, out.ok, out.files], ['packed and working', true, 1]);
  // A plain `cat` runs from the bundled module the package ships (scripts/bundle-cat.mjs): no
  // static import of another module of ours is left in it.
  assert.equal(run(process.execPath, [join(pkgDir, 'bin/layerfs.js'), '--store', 'esm/store.sqlite', 'cat', 'p', 'a.txt'], project), 'packed and working');
  assert.doesNotMatch(readFileSync(join(pkgDir, 'dist/lib/cli/plain-cat-entry.js'), 'utf8'), /^import[^'"]*['"]\.{1,2}\//m);

  const cjs = `
    const { Client } = require('layerfs');
    const { mkdirSync, writeFileSync } = require('node:fs');
    mkdirSync('src-cjs'); writeFileSync('src-cjs/b.txt', 'from CommonJS');
    const c = Client.create('cjs/store.sqlite');
    c.initLayerStack({ name: 'q', source: 'src-cjs' }).then(() => {
      console.log(c.cat('q', 'b.txt').toString());
      c.close();
    });`;
  writeFileSync(join(project, 'check.cjs'), cjs);
  assert.equal(run(process.execPath, ['check.cjs'], project).trim(), 'from CommonJS');

  const ts = `
    import { Client, LayerFsError, type EntryInfo, type InitReceipt } from 'layerfs';
    const c: Client = Client.connect('.layerfs/store.sqlite', { readonly: true });
    const entries: EntryInfo[] = c.ls('tour');
    const names: string[] = entries.map((e) => e.name);
    const r: Promise<InitReceipt> | undefined = undefined;
    try { c.ls('nope'); } catch (e) { if (e instanceof LayerFsError) console.log(e.code, names.length, r); }
    c.close();`;
  writeFileSync(join(project, 'consumer.mts'), ts);
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, skipLibCheck: false, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', noEmit: true, types: ['node'] }, files: ['consumer.mts'] }),
  );
  const tsc = spawnSync(process.execPath, [join(project, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: project, env, encoding: 'utf8' });
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
  assert.match(run(process.execPath, [join(pkgDir, 'bin/layerfs.js'), '--version'], project), /^layerfs \d/);
});
