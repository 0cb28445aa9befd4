// export --format tar: deterministic pax tar; `tar -x` of it equals `export`; init --from-tar
// gives the same root id as importing the extracted directory; hostile archives are refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chownSync, chmodSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { getXattrs, setTimes, setXattr } from '../../lib/native/index.js';
import { cli } from '../helpers/cli.js';
import { assertIntact } from '../helpers/integrity.js';
import { tempDir } from '../helpers/tmp.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

/** Everything tar can carry, per path: kind, mode, owner, ns mtime, xattrs, bytes, hard-link group. */
function deepView(root: string): Map<string, string> {
  const m = new Map<string, string>();
  const groups = new Map<bigint, string>();
  const walk = (rel: string) => {
    const abs = rel ? join(root, rel) : root;
    const st = lstatSync(abs, { bigint: true });
    const x = st.isSymbolicLink() ? '' : getXattrs(abs).map((e) => `${e.name}=${Buffer.from(e.value).toString('hex')}`).sort().join(',');
    let what = '';
    if (st.isFile()) {
      const first = groups.get(st.ino);
      if (!first) groups.set(st.ino, rel);
      what = first ? `link-to:${first}` : readFileSync(abs).toString('base64');
    } else if (st.isSymbolicLink()) what = `->${readlinkSync(abs)}`;
    m.set(rel || '.', `${(st.mode & 0o170000n).toString(8)} ${(st.mode & 0o7777n).toString(8)} ${st.uid}:${st.gid} ${st.isSymbolicLink() ? '' : st.mtimeNs} ${x} ${what}`);
    if (st.isDirectory()) for (const n of readdirSync(abs).sort()) walk(rel ? `${rel}/${n}` : n);
  };
  walk('');
  return m;
}

function fixture(dir: string): string {
  const src = join(dir, 'src');
  const deep = join(src, 'd'.repeat(90), 'e'.repeat(90), 'f'.repeat(90));
  mkdirSync(deep, { recursive: true });
  writeFileSync(join(deep, 'long-name-' + 'x'.repeat(150)), 'deep\n');
  writeFileSync(join(src, 'naïve ☃.txt'), 'unicode\n');
  writeFileSync(join(src, 'big.bin'), Buffer.alloc(300_000, 7));
  writeFileSync(join(src, 'run.sh'), '#!/bin/sh\n');
  chmodSync(join(src, 'run.sh'), 0o4755);
  linkSync(join(src, 'run.sh'), join(src, 'hard'));
  symlinkSync('t'.repeat(200), join(src, 'longlink'));
  symlinkSync('run.sh', join(src, 'short'));
  mkdirSync(join(src, 'empty'));
  spawnSync('mkfifo', [join(src, 'fifo')]);
  writeFileSync(join(src, 'owned'), 'o');
  chownSync(join(src, 'owned'), 1234, 5678);
  setXattr(join(src, 'owned'), 'user.note', Buffer.from([0, 1, 2, 255]));
  setXattr(join(src, 'empty'), 'user.dir', Buffer.from('x'));
  setTimes(join(src, 'owned'), 1_700_000_000_123_456_789n, 1_700_000_000_123_456_789n);
  setTimes(join(src, 'empty'), 1_600_000_000_000_000_001n, 1_600_000_000_000_000_001n);
  return src;
}

test('tar export is deterministic, tar -x equals export, and init --from-tar gives the imported root', async () => {
  const dir = tempDir();
  const src = fixture(dir);
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  await c.initLayerStack({ name: 'p', source: src });
  c.close();
  const tarFile = join(dir, 'p.tar');
  const w = cli(['--store', store, 'export', 'p', '--format', 'tar', '-o', tarFile]);
  assert.equal(w.code, 0, w.stderr);
  const piped = spawnSync(process.execPath, nodeArgs('lib/cli/bin.ts', '--store', store, 'export', 'p', '--format', 'tar'), { encoding: 'buffer' });
  assert.equal(piped.status, 0, piped.stderr.toString());
  assert.ok(readFileSync(tarFile).equals(piped.stdout), 'the same state gives the same bytes');
  const listed = spawnSync('tar', ['-tvf', tarFile], { encoding: 'utf8' });
  assert.equal(listed.status, 0, listed.stderr);
  const x = join(dir, 'x');
  mkdirSync(x);
  const ex = spawnSync('tar', ['--xattrs', '--xattrs-include=*', '--numeric-owner', '-xpf', tarFile, '-C', x], { encoding: 'utf8' });
  assert.equal(ex.status, 0, ex.stderr);
  const e = join(dir, 'e');
  const c2 = Client.connect(store);
  c2.export('p', e);
  assert.deepEqual(deepView(x), deepView(e));
  const fromDir = await c2.initLayerStack({ name: 'fromdir', source: x });
  const fromTar = await c2.initLayerStackFromTar({ name: 'fromtar', tar: [readFileSync(tarFile)] });
  assert.equal(fromTar.layer.rootId, fromDir.layer.rootId);
  assert.equal(fromTar.files, fromDir.files);
  // stdin, through the CLI
  const viaStdin = spawnSync(process.execPath, nodeArgs('lib/cli/bin.ts', '--store', store, '--json', 'layerstack', 'init', '--name', 'stdin', '--from-tar', '-'), { input: readFileSync(tarFile), encoding: 'utf8' });
  assert.equal(viaStdin.status, 0, viaStdin.stderr);
  assert.equal(JSON.parse(viaStdin.stdout).layer.rootId, fromDir.layer.rootId);
  assert.equal(readdirSync(`${store}.d`).filter((n) => n.startsWith('tar-')).length, 0, 'the extraction is removed');
  for (const args of [['--format', 'zip', join(dir, 'z')], ['--format', 'tar', join(dir, 'd')]]) {
    const bad = cli(['--store', store, 'export', 'p', ...args]);
    assert.equal(bad.code, 1, args.join(' '));
    assert.match(bad.stderr, /ERR_INVALID_ARGUMENT/, bad.stderr);
  }
  const taken = cli(['--store', store, 'layerstack', 'init', '--name', 'p', '--from-tar', tarFile]);
  assert.match(taken.stderr, /ERR_NAME_TAKEN/);
  assertIntact(c2);
  c2.close();
});

function pyTar(file: string, script: string): void {
  const r = spawnSync('python3', ['-c', `import tarfile, io\nt = tarfile.open(${JSON.stringify(file)}, 'w', format=tarfile.PAX_FORMAT)\ndef add(name, data=b'', **kw):\n  i = tarfile.TarInfo(name)\n  for k, v in kw.items(): setattr(i, k, v)\n  i.size = len(data)\n  t.addfile(i, io.BytesIO(data))\n${script}\nt.close()`], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

test('hostile archives: .., absolute names and entries under a symlink are refused', async () => {
  const dir = tempDir();
  const c = Client.create(join(dir, 's.sqlite'));
  const outside = join(dir, 'outside');
  mkdirSync(outside);
  const cases: [string, string][] = [
    ['dotdot', "add('../evil', b'x')"],
    ['abs', "add('/tmp/evil-layerfs', b'x')"],
    ['viasymlink', `add('a', type=tarfile.SYMTYPE, linkname=${JSON.stringify(outside)})\nadd('a/evil', b'x')`],
    ['hardlink', `add('h', type=tarfile.LNKTYPE, linkname='/etc/passwd')`],
  ];
  for (const [name, script] of cases) {
    const f = join(dir, `${name}.tar`);
    pyTar(f, script);
    await assert.rejects(c.initLayerStackFromTar({ name, tar: [readFileSync(f)] }), (e: unknown) => isLayerFsError(e) && e.code === 'ERR_UNSAFE_PATH', name);
  }
  assert.deepEqual(readdirSync(outside), []);
  assert.equal(existsSync('/tmp/evil-layerfs'), false);
  await assert.rejects(c.initLayerStackFromTar({ name: 'junk', tar: [Buffer.alloc(1024, 0x41)] }), (e: unknown) => isLayerFsError(e) && e.code === 'ERR_INVALID_ARGUMENT');
  assert.equal(c.layerStacks().length, 0);
  c.close();
});
