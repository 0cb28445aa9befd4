/**
 * The published package: `npm pack` (which runs prebuildify), install the tarball into a fresh
 * project, and prove the prebuilt addon is used without compiling (no build/ appears) and that
 * the package works from there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/tmp.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

test('npm pack ships a prebuilt addon that loads in a fresh project without compiling', { timeout: 840_000 }, () => {
  const dir = tempDir('layerfs-pack-');
  const run = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' } });
  // Pack from a copy: prepack rebuilds the addon, which must not replace the build/ that the
  // other test files are loading at the same time.
  const copy = join(dir, 'checkout');
  for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'CMakeLists.txt', 'binding.gyp', 'README.md', 'CHANGELOG.md', 'bin', 'lib', 'native', 'scripts', 'docs']) {
    cpSync(join(root, entry), join(copy, entry), { recursive: true });
  }
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
  // prepack's build output shares stdout with npm's JSON, which comes last.
  const packOut = run('npm', ['pack', '--json', '--pack-destination', dir], copy);
  const packed = JSON.parse(packOut.slice(packOut.startsWith('[') ? 0 : packOut.lastIndexOf('\n[') + 1)) as { filename: string; files: { path: string }[] }[];
  const files = packed[0]!.files.map((f) => f.path);
  assert.ok(files.some((f) => /^prebuilds\/linux-x64\/.+\.node$/.test(f)), 'tarball has prebuilds/linux-x64/*.node');
  assert.ok(files.includes('dist/lib/sdk/index.js') && files.includes('bin/layerfs.js'));
  assert.ok(!files.some((f) => f.startsWith('build/')), 'no local build/ in the tarball');

  const project = join(dir, 'project');
  run('mkdir', ['-p', project], dir);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', type: 'module', private: true }));
  // Dependencies come from the registry without their own install scripts; better-sqlite3's
  // compiled binary is borrowed from this checkout (compiling it again only costs time). The
  // package's own install script then runs for real.
  run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', join(dir, packed[0]!.filename)], project);
  cpSync(join(root, 'node_modules/better-sqlite3/build'), join(project, 'node_modules/better-sqlite3/build'), { recursive: true });
  const pkgDir = join(project, 'node_modules/layerfs');
  run('npm', ['rebuild', 'layerfs', '--foreground-scripts'], project);
  assert.ok(!existsSync(join(pkgDir, 'build')), 'install compiled instead of using the prebuilt addon');
  assert.ok(readdirSync(join(pkgDir, 'prebuilds/linux-x64')).some((f) => f.endsWith('.node')));

  const script = `
    import { Client, nativeInfo } from 'layerfs';
    import { mkdirSync, writeFileSync } from 'node:fs';
    mkdirSync('src'); writeFileSync('src/a.txt', 'packed and working');
    const c = Client.create('store.sqlite');
    const r = await c.initLayerStack({ name: 'p', source: 'src' });
    console.log(JSON.stringify({ text: c.cat('p', 'a.txt').toString(), ok: c.verify().ok, simd: nativeInfo().simd, files: r.files }));
    c.close();`;
  writeFileSync(join(project, 'check.mjs'), script);
  const out = JSON.parse(run(process.execPath, ['check.mjs'], project));
  assert.equal(out.text, 'packed and working');
  assert.equal(out.ok, true);
  assert.equal(out.files, 1);
  assert.match(run(process.execPath, [join(pkgDir, 'bin/layerfs.js'), '--version'], project), /^layerfs \d/);
});
