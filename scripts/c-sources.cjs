#!/usr/bin/env node
// Where the addon's third-party C sources are. In a checkout they are read from the npm packages
// that ship them (zstd's in zstd-napi, BLAKE3's in @c4312/blake3-native, both devDependencies);
// `vendor` (run by prepack) copies the files the build uses, with their licences, into deps/, so
// the published package can compile its addon without those packages. deps/ wins when present.
//   node scripts/c-sources.cjs dir zstd|blake3|sqlite   the directory, relative to the package root
//   node scripts/c-sources.cjs zstd-sources      zstd's .c files, relative, space-separated
//   node scripts/c-sources.cjs vendor            fill deps/ from node_modules
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const vendored = { zstd: path.join(root, 'deps/zstd/lib'), blake3: path.join(root, 'deps/blake3') };

function fromPackage(which) {
  // SQLite's headers only (the addon is a loadable extension of better-sqlite3's own SQLite).
  // better-sqlite3 is a dependency and publishes deps/sqlite3, so they are never vendored.
  if (which === 'sqlite') return path.join(path.dirname(require.resolve('better-sqlite3/package.json', { paths: [root] })), 'deps/sqlite3');
  if (which === 'zstd') return path.join(path.dirname(require.resolve('zstd-napi/package.json', { paths: [root] })), 'deps/zstd/lib');
  return path.join(path.dirname(require.resolve('@c4312/blake3-native/package.json', { paths: [root] })), 'c');
}

function dir(which) {
  return vendored[which] && fs.existsSync(vendored[which]) ? vendored[which] : fromPackage(which);
}

function copy(from, to, names) {
  fs.mkdirSync(to, { recursive: true });
  for (const n of names) fs.cpSync(path.join(from, n), path.join(to, n), { recursive: true });
}

function vendor() {
  fs.rmSync(path.join(root, 'deps'), { recursive: true, force: true });
  const zstd = fromPackage('zstd');
  copy(zstd, vendored.zstd, ['common', 'compress', 'decompress', 'zstd.h', 'zstd_errors.h', 'zdict.h']);
  copy(path.join(zstd, '..'), path.join(root, 'deps/zstd'), ['LICENSE', 'COPYING']);
  const blake3 = fromPackage('blake3');
  const unix = fs.readdirSync(blake3).filter((n) => n.endsWith('_x86-64_unix.S'));
  copy(blake3, vendored.blake3, ['blake3.c', 'blake3.h', 'blake3_impl.h', 'blake3_dispatch.c', 'blake3_portable.c', ...unix]);
  const pkg = require(require.resolve('@c4312/blake3-native/package.json', { paths: [root] }));
  fs.writeFileSync(
    path.join(vendored.blake3, 'NOTICE'),
    `The BLAKE3 C implementation (https://github.com/BLAKE3-team/BLAKE3), as shipped in ${pkg.name}@${pkg.version} (${pkg.license}).\n` +
      'BLAKE3 is released into the public domain (CC0 1.0), or under Apache-2.0, or Apache-2.0 with LLVM exceptions.\n',
  );
}

const [cmd, arg] = process.argv.slice(2);
if (cmd === 'dir') process.stdout.write(path.relative(process.cwd(), dir(arg)) + '\n');
else if (cmd === 'zstd-sources') {
  const d = dir('zstd');
  const files = ['common', 'compress', 'decompress'].flatMap((s) => fs.readdirSync(path.join(d, s)).filter((n) => n.endsWith('.c')).sort().map((n) => path.relative(process.cwd(), path.join(d, s, n))));
  process.stdout.write(files.join(' ') + '\n');
} else if (cmd === 'vendor') vendor();
else {
  process.stderr.write('usage: c-sources.cjs dir zstd|blake3|sqlite | zstd-sources | vendor\n');
  process.exit(2);
}
