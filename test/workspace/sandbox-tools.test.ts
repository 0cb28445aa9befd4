/**
 * Ordinary tools work inside a Sandbox: git, make, python3 -m venv, and npm ci from a local
 * cache (copied from this machine's npm cache, which `npm ci` of this repository filled) with
 * the network off.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../../lib/sdk/index.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The npm cache's entries for `url` (index bucket and content), copied into a new cache at `to`. */
function copyCacheEntry(url: string, to: string): void {
  const from = spawnSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).stdout.trim();
  const cacache = join(from, '_cacache');
  const buckets = spawnSync('grep', ['-rlF', url, join(cacache, 'index-v5')], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  assert.ok(buckets.length > 0, `${url} is in the npm cache ${cacache} (run npm ci first)`);
  for (const b of buckets) {
    const dest = join(to, '_cacache', relative(cacache, b));
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(b, dest);
    for (const line of readFileSync(b, 'utf8').split('\n').filter(Boolean)) {
      const entry = JSON.parse(line.slice(line.indexOf('\t') + 1)) as { integrity?: string };
      if (!entry.integrity) continue;
      const [algo, b64] = entry.integrity.split('-', 2) as [string, string];
      const hex = Buffer.from(b64, 'base64').toString('hex');
      const rel = join('content-v2', algo, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4));
      if (!existsSync(join(cacache, rel))) continue;
      mkdirSync(dirname(join(to, '_cacache', rel)), { recursive: true });
      copyFileSync(join(cacache, rel), join(to, '_cacache', rel));
    }
  }
}

test('git, make, python3 -m venv and npm ci from a local cache work inside a Sandbox without network', async () => {
  const dir = tempDir('layerfs-sandbox-tools-');
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'src'));
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string; integrity: string; resolved?: string }> };
  const commander = lock.packages['node_modules/commander']!;
  const tarball = commander.resolved ?? `https://registry.npmjs.org/commander/-/commander-${commander.version}.tgz`;
  writeFileSync(join(dir, 'src', 'package.json'), JSON.stringify({ name: 'tools-probe', version: '1.0.0', dependencies: { commander: commander.version } }));
  writeFileSync(
    join(dir, 'src', 'package-lock.json'),
    JSON.stringify({
      name: 'tools-probe',
      version: '1.0.0',
      lockfileVersion: 3,
      requires: true,
      packages: {
        '': { name: 'tools-probe', version: '1.0.0', dependencies: { commander: commander.version } },
        'node_modules/commander': { version: commander.version, resolved: tarball, integrity: commander.integrity },
      },
    }),
  );
  writeFileSync(join(dir, 'src', 'Makefile'), 'out.txt: in.txt\n\ttr a-z A-Z < in.txt > out.txt\n');
  writeFileSync(join(dir, 'src', 'in.txt'), 'made inside\n');
  const cache = join(dir, 'npm-cache');
  copyCacheEntry(tarball, cache);

  const client = Client.create(join(dir, 's.sqlite'));
  try {
    await client.initLayerStack({ name: 'p', source: join(dir, 'src') });
    client.forkBranch({ name: 'b', layer: 'p' });
    client.createSandbox('tools', { memoryMib: 1024, rw: [cache] });
    const ws = await client.createWorkspace('b', { at: join(dir, 'ws'), projection: 'materialize', sandbox: 'tools' });
    const script = [
      'set -e',
      'git init -q . && git add -A && git -c user.email=t@example.com -c user.name=t commit -qm first && git log --format=%s > git.txt',
      'make -s',
      '/usr/bin/python3 -m venv venv && ./venv/bin/python -c "import sys; print(sys.prefix)" > venv.txt',
      `npm ci --offline --cache ${cache} --no-audit --no-fund --loglevel=error`,
      'node -e "console.log(typeof require(\'commander\').Command)" > npm.txt',
    ].join('\n');
    const e = await client.exec(ws.id, ['sh', '-c', script]);
    assert.equal(e.exitCode, 0);
    assert.equal(readFileSync(join(ws.path, 'git.txt'), 'utf8'), 'first\n');
    assert.equal(readFileSync(join(ws.path, 'out.txt'), 'utf8'), 'MADE INSIDE\n');
    assert.equal(readFileSync(join(ws.path, 'venv.txt'), 'utf8'), `${join(ws.path, 'venv')}\n`);
    assert.equal(readFileSync(join(ws.path, 'npm.txt'), 'utf8'), 'function\n');
    assert.ok(e.resources!.peakPids! >= 2);
    await client.endWorkspace(ws.id, { discard: true });
    await client.removeSandbox('tools');
    assertIntact(client);
  } finally {
    client.close();
  }
});
