#!/usr/bin/env node
// prebuildify has no cmake-js backend; it runs this script in place of node-gyp
// (`rebuild --target=… --devdir=… --arch=… --release`). We build with cmake-js into
// build/Release/layerfs_native.node, where prebuildify picks the .node file up.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(root, 'package.json'));
const cmakeJs = require.resolve('cmake-js/bin/cmake-js');

const args = process.argv.slice(2);
const flag = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const arch = flag('arch');
const debug = args.includes('--debug');

// N-API builds do not depend on --target (the Node version); --devdir is a node-gyp header cache
// that cmake-js does not need because it uses node-api-headers.
const cmd = ['rebuild', '--out', 'build', ...(arch ? ['--arch', arch] : []), ...(debug ? ['--debug'] : [])];
const r = spawnSync(process.execPath, [cmakeJs, ...cmd], { cwd: root, stdio: 'inherit' });
if (r.error) throw r.error;
process.exit(r.status ?? 1);
