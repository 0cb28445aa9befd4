// Scenarios shared by the FUSE test files (each backend runs them): POSIX basics, programs
// compared with a plain directory, rename/link/unlink storms.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { constants as fsc, cpSync, mkdirSync, symlinkSync, writeFileSync, linkSync, chmodSync } from 'node:fs';
import { access, appendFile, chmod, link, lstat, mkdir, open, readdir, readFile, readlink, rename, rmdir, stat, statfs, symlink, truncate, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { commitFuse, stopDaemon, unmountWorkspace, type Backend } from '../../lib/fuse/index.js';
import { getXattrs, listXattrs, removeXattr, setXattr } from '../../lib/native/xattr.js';
import { seededBytes } from '../helpers/tmp.js';
import { mountBranch, ok, setupStore, walk, withMount, type Mounted, type StoreSetup } from './helpers.js';
import { Rng } from '../helpers/random.js';

export const big = seededBytes(3, 3 * 1024 * 1024 + 17);

export function fillBasic(src: string): void {
  mkdirSync(join(src, 'lib/deep'), { recursive: true });
  writeFileSync(join(src, 'README'), 'readme\n');
  writeFileSync(join(src, 'lib/a.txt'), 'a\n');
  writeFileSync(join(src, 'lib/deep/b.txt'), 'b\n');
  writeFileSync(join(src, 'big.bin'), big);
  symlinkSync('README', join(src, 'link'));
  linkSync(join(src, 'lib/a.txt'), join(src, 'lib/a-hard'));
}

export async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? 'error';
  }
  return 'ok';
}

/** Files, directories, links, modes, xattrs and errors through a mount of fillBasic's tree. */
export async function posixScenario(mounted: Mounted): Promise<void> {
  const m = mounted.path;
  // Stored content reads back byte for byte, small and chunked.
  assert.equal(await readFile(join(m, 'README'), 'utf8'), 'readme\n');
  assert.ok((await readFile(join(m, 'big.bin'))).equals(big));
  assert.deepEqual((await readdir(m)).sort(), ['README', 'big.bin', 'lib', 'link']);
  assert.equal(await readlink(join(m, 'link')), 'README');
  const a = await stat(join(m, 'lib/a.txt'));
  const ah = await stat(join(m, 'lib/a-hard'));
  assert.equal(a.ino, ah.ino);
  assert.equal(a.nlink, 2);

  // create, O_EXCL, append, O_TRUNC, truncate
  await writeFile(join(m, 'new.txt'), 'hello');
  assert.equal(await code(writeFile(join(m, 'new.txt'), 'x', { flag: 'wx' })), 'EEXIST');
  await appendFile(join(m, 'new.txt'), ' world');
  assert.equal(await readFile(join(m, 'new.txt'), 'utf8'), 'hello world');
  const fh = await open(join(m, 'new.txt'), fsc.O_WRONLY | fsc.O_APPEND);
  await fh.write('!', 0);
  await fh.close();
  assert.equal(await readFile(join(m, 'new.txt'), 'utf8'), 'hello world!');
  await writeFile(join(m, 'README'), 'short');
  assert.equal(await readFile(join(m, 'README'), 'utf8'), 'short');
  await truncate(join(m, 'README'), 2);
  assert.equal(await readFile(join(m, 'README'), 'utf8'), 'sh');
  await truncate(join(m, 'README'), 4);
  assert.deepEqual([...(await readFile(join(m, 'README')))], [0x73, 0x68, 0, 0]);

  // Random writes into the stored large file merge with its chunks.
  let expect = Buffer.from(big);
  const bh = await open(join(m, 'big.bin'), 'r+');
  for (const [pos, len] of [[0, 10], [1_000_000, 4096], [2_500_000, 70_000], [big.length - 5, 100]] as [number, number][]) {
    const data = seededBytes(pos + 1, len);
    await bh.write(data, 0, len, pos);
    if (pos + len > expect.length) expect = Buffer.concat([expect, Buffer.alloc(pos + len - expect.length)]);
    data.copy(expect, pos);
  }
  await bh.close();
  assert.ok((await readFile(join(m, 'big.bin'))).equals(expect));

  // directories
  await mkdir(join(m, 'd/e'), { recursive: true });
  assert.equal(await code(rmdir(join(m, 'd'))), 'ENOTEMPTY');
  assert.equal(await code(unlink(join(m, 'd'))), 'EISDIR');
  assert.equal(await code(mkdir(join(m, 'd'))), 'EEXIST');
  assert.equal(await code(readFile(join(m, 'nope'))), 'ENOENT');
  assert.equal(await code(readdir(join(m, 'README'))), 'ENOTDIR');
  await rmdir(join(m, 'd/e'));

  // rename: over a file, directory across parents, into itself
  await rename(join(m, 'new.txt'), join(m, 'lib/a.txt'));
  assert.equal(await readFile(join(m, 'lib/a.txt'), 'utf8'), 'hello world!');
  assert.equal((await stat(join(m, 'lib/a-hard'))).nlink, 1);
  await rename(join(m, 'lib'), join(m, 'd/lib2'));
  assert.equal(await readFile(join(m, 'd/lib2/deep/b.txt'), 'utf8'), 'b\n');
  assert.equal(await code(rename(join(m, 'd'), join(m, 'd/lib2/inside'))), 'EINVAL');
  // mv -n falls back when RENAME_NOREPLACE is not available through libfuse 2.
  await ok('mv', ['-n', join(m, 'd/lib2/a.txt'), join(m, 'README')]);
  assert.equal(await readFile(join(m, 'README'), 'utf8'), 'sh\0\0');

  // links, symlinks, modes, times
  await link(join(m, 'README'), join(m, 'readme-hard'));
  assert.equal((await stat(join(m, 'README'))).nlink, 2);
  assert.equal((await stat(join(m, 'README'))).ino, (await stat(join(m, 'readme-hard'))).ino);
  assert.equal(await code(link(join(m, 'd'), join(m, 'dlink'))), 'EPERM');
  await symlink('d/lib2/deep', join(m, 'sym'));
  assert.equal(await readFile(join(m, 'sym/b.txt'), 'utf8'), 'b\n');
  assert.ok((await lstat(join(m, 'sym'))).isSymbolicLink());
  await chmod(join(m, 'README'), 0o751);
  assert.equal((await stat(join(m, 'README'))).mode & 0o7777, 0o751);
  await utimes(join(m, 'README'), 1_600_000_000, 1_600_000_000);
  assert.equal((await stat(join(m, 'README'))).mtimeMs, 1_600_000_000_000);
  await access(join(m, 'README'), fsc.R_OK | fsc.W_OK);
  const fs = await statfs(m);
  assert.ok(fs.bsize > 0 && fs.blocks > 0);

  // user xattrs, through the addon's l*xattr calls (the syscalls setfattr and getfattr make)
  setXattr(join(m, 'README'), 'user.color', 'blue');
  assert.deepEqual(getXattrs(join(m, 'README')).map((x) => [x.name, x.value.toString()]), [['user.color', 'blue']]);
  assert.ok(listXattrs(join(m, 'README')).includes('user.color'));
  removeXattr(join(m, 'README'), 'user.color');
  assert.deepEqual(getXattrs(join(m, 'README')), []);
  assert.throws(() => removeXattr(join(m, 'README'), 'user.color'));
  assert.throws(() => setXattr(join(m, 'README'), 'trusted.x', '1'));

  // an unlinked file stays readable and writable through an open descriptor
  const keep = await open(join(m, 'readme-hard'), 'r+');
  await unlink(join(m, 'readme-hard'));
  await unlink(join(m, 'README'));
  assert.deepEqual((await readdir(m)).filter((n) => n.startsWith('.fuse_hidden')), []);
  await keep.write('XY', 0);
  const back = Buffer.alloc(4);
  await keep.read(back, 0, 4, 0);
  assert.deepEqual([...back], [0x58, 0x59, 0, 0]);
  await keep.close();
  assert.deepEqual((await readdir(m)).sort(), ['big.bin', 'd', 'link', 'sym']);
}

export function project(src: string): void {
  mkdirSync(join(src, 'src/util'), { recursive: true });
  writeFileSync(join(src, 'README.md'), '# demo\n');
  writeFileSync(join(src, 'src/main.c'), 'int main(void) { return 0; }\n');
  writeFileSync(join(src, 'src/util/str.c'), '/* strings */\n'.repeat(200));
  writeFileSync(join(src, 'data.bin'), seededBytes(21, 400_000));
  writeFileSync(join(src, 'build.sh'), '#!/bin/sh\necho build\n');
  chmodSync(join(src, 'build.sh'), 0o755);
  symlinkSync('src/main.c', join(src, 'main-link'));
}

export const sha = async (p: string) => createHash('sha256').update(await readFile(p)).digest('hex');

/** Mounts, runs steps in the mount and on a plain copy of the source, commits, remounts. */
export async function compareWithPlain(s: StoreSetup, steps: (dir: string) => Promise<string[]>, opts: { skip?: (rel: string) => boolean; after?: (dir: string) => Promise<string[]>; backend?: Backend } = {}): Promise<void> {
  const plain = join(s.dir, 'plain');
  cpSync(s.src, plain, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
  const plainOut = await steps(plain);
  const plainTree = await walk(plain, opts);
  let workspace = '';
  const backend = opts.backend ? { backend: opts.backend } : {};
  await withMount(
    s,
    async (m) => {
    workspace = m.workspaceId;
    const mountOut = await steps(m.path);
    assert.deepEqual(mountOut, plainOut, 'program output in the mount equals the plain directory');
    assert.deepEqual(await walk(m.path, opts), plainTree, 'tree in the mount equals the plain directory');
    const c = await commitFuse(s.storePath, m.workspaceId);
    assert.equal(c.outcome, 'Created');
    },
    backend,
  );
  assert.ok(workspace);
  // A fresh mount of the Commit shows the same tree.
  const again = await mountBranch(s, backend);
  try {
    assert.deepEqual(await walk(again.path, opts), plainTree, 'a fresh mount of the Commit equals the plain directory');
    if (opts.after) assert.deepEqual(await opts.after(again.path), await opts.after(plain));
  } finally {
    await unmountWorkspace(s.storePath, again.workspaceId, { discard: true }).catch(() => {});
    await stopDaemon(s.storePath, { discard: true });
  }
  assert.equal(s.client.verify().ok, true);
}

export const gitEnv = (home: string): NodeJS.ProcessEnv => ({
  ...process.env,
  HOME: home,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'A U Thor',
  GIT_AUTHOR_EMAIL: 'author@example.com',
  GIT_COMMITTER_NAME: 'C O Mitter',
  GIT_COMMITTER_EMAIL: 'committer@example.com',
  GIT_AUTHOR_DATE: '2020-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2020-01-01T00:00:00Z',
});



export function fillStorm(src: string): void {
  for (let d = 0; d < 4; d++) {
    mkdirSync(join(src, `d${d}`));
    for (let f = 0; f < 6; f++) writeFileSync(join(src, `d${d}`, `f${f}`), `file ${d}/${f}\n`);
  }
}

export function rng(seed: number): (n: number) => number {
  const r = new Rng(seed);
  return (n) => r.below(n);
}

export async function storm(root: string, seed: number, steps: number): Promise<string[]> {
  const r = rng(seed);
  const names = ['a', 'b', 'c', 'f0', 'f1', 'f2', 'sub', 'x'];
  const dirs = ['', 'd0', 'd1', 'd2', 'd3', 'd0/sub', 'd1/sub', 'new'];
  const pick = () => join(root, dirs[r(dirs.length)]!, names[r(names.length)]!);
  const log: string[] = [];
  for (let i = 0; i < steps; i++) {
    const op = r(9);
    const a = pick();
    const b = pick();
    let res = 'ok';
    try {
      switch (op) {
        case 0:
        case 1:
          await rename(a, b);
          break;
        case 2:
          await link(a, b);
          break;
        case 3:
          await unlink(a);
          break;
        case 4:
          await writeFile(a, `w${i}\n`, { flag: r(2) ? 'w' : 'wx' });
          break;
        case 5:
          await mkdir(a);
          break;
        case 6:
          await rmdir(a);
          break;
        case 7:
          await appendFile(a, `+${i}`);
          break;
        case 8:
          await symlink(`target-${i}`, a);
          break;
      }
    } catch (e) {
      res = (e as NodeJS.ErrnoException).code ?? 'error';
    }
    log.push(`${i} ${op} ${res}`);
  }
  return log;
}


export async function gitScenario(backend?: Backend): Promise<void> {
  const s = await setupStore(project, 'layerfs-git-');
  const env = gitEnv(s.dir);
  const git = (cwd: string, ...args: string[]) => ok('git', args, { cwd, env });
  await compareWithPlain(
    s,
    async (d) => {
      const out: string[] = [];
      await git(d, 'init', '-q', '-b', 'main');
      await git(d, 'add', '-A');
      await git(d, 'commit', '-q', '-m', 'initial');
      await writeFile(join(d, 'src/main.c'), 'int main(void) { return 1; }\n');
      await writeFile(join(d, 'NEW.txt'), 'new file\n');
      await git(d, 'rm', '-q', 'README.md');
      await git(d, 'mv', 'src/util/str.c', 'src/str.c');
      await ok('chmod', ['+x', join(d, 'src/main.c')]);
      out.push(await git(d, 'status', '--porcelain=v1'));
      await git(d, 'add', '-A');
      await git(d, 'commit', '-q', '-m', 'second');
      await git(d, 'checkout', '-q', '-b', 'feature', 'HEAD~1');
      out.push(await git(d, 'status', '--porcelain=v1'));
      await writeFile(join(d, 'feature.txt'), 'feature\n');
      await git(d, 'add', 'feature.txt');
      await git(d, 'commit', '-q', '-m', 'feature work');
      await git(d, 'checkout', '-q', 'main');
      out.push(await git(d, 'log', '--all', '--format=%H %P %s'));
      out.push(await git(d, 'status', '--porcelain=v1', '--ignored'));
      out.push(await git(d, 'fsck', '--strict', '--no-progress'));
      out.push(await git(d, 'rev-parse', 'HEAD', 'HEAD^{tree}', 'feature'));
      return out;
    },
    {
      backend,
      // The index records inode numbers, devices and ctimes; everything else must match.
      skip: (rel) => rel === '.git/index',
      after: async (d) => [await git(d, 'status', '--porcelain=v1'), await git(d, 'log', '--format=%H %s'), await git(d, 'fsck', '--no-progress')],
    },
  );
}

export async function tarScenario(backend?: Backend): Promise<void> {
  const s = await setupStore(project, 'layerfs-tar-');
  // A real archive: TypeScript's library files, npm's .bin symlinks, plus hard links.
  const archive = join(s.dir, 'fixture.tar');
  const stage = join(s.dir, 'stage');
  mkdirSync(stage);
  await ok('tar', ['-C', join(process.cwd(), 'node_modules'), '-cf', join(s.dir, 'part.tar'), 'typescript/lib', '.bin', 'esbuild']);
  await ok('tar', ['-C', stage, '-xf', join(s.dir, 'part.tar')]);
  await ok('ln', [join(stage, 'typescript/lib/tsc.js'), join(stage, 'tsc-hard.js')]);
  await ok('ln', [join(stage, 'typescript/lib/tsc.js'), join(stage, 'typescript/tsc-hard2.js')]);
  await ok('tar', ['-C', stage, '--sort=name', '-cf', archive, '.']);
  const recreate = async (d: string, out: string) => {
    await ok('tar', ['-C', join(d, 'x'), '--sort=name', '--format=gnu', '--numeric-owner', '-cf', out, '.']);
    return out;
  };
  let n = 0;
  await compareWithPlain(s, async (d) => {
    mkdirSync(join(d, 'x'));
    await ok('tar', ['-C', join(d, 'x'), '-xf', archive]);
    const listing = await ok('tar', ['-tvf', archive]);
    const out = await recreate(d, join(s.dir, `recreated-${n++}.tar`));
    return [listing.split('\n').length.toString(), await sha(out)];
  }, { backend });
}

export async function sqliteScenario(backend?: Backend): Promise<void> {
  const s = await setupStore(project, 'layerfs-sqlite-');
  const script = [
    'PRAGMA page_size=4096;',
    'CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, blob BLOB);',
    'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 20000) INSERT INTO t SELECT x, printf(\'name-%08d\', x), zeroblob(x % 300) FROM c;',
    'CREATE INDEX t_name ON t(name);',
    'UPDATE t SET name = upper(name) WHERE id % 7 = 0;',
    'DELETE FROM t WHERE id % 11 = 0;',
    'BEGIN; INSERT INTO t(name) VALUES (\'in-txn\'); ROLLBACK;',
    'VACUUM;',
    '',
  ].join('\n');
  const wal = ['PRAGMA journal_mode=WAL;', 'CREATE TABLE k(v);', 'INSERT INTO k VALUES (1),(2),(3);', 'PRAGMA wal_checkpoint(TRUNCATE);', ''].join('\n');
  await compareWithPlain(
    s,
    async (d) => {
      await ok('sqlite3', [join(d, 'app.db')], { input: script });
      await ok('sqlite3', [join(d, 'wal.db')], { input: wal });
      return [
        await ok('sqlite3', [join(d, 'app.db'), 'PRAGMA integrity_check; SELECT count(*), sum(length(name)), sum(length(blob)) FROM t;']),
        await ok('sqlite3', [join(d, 'app.db'), '.dump']).then((x) => createHash('sha256').update(x).digest('hex')),
        await ok('sqlite3', [join(d, 'wal.db'), 'SELECT group_concat(v) FROM k;']),
        await sha(join(d, 'app.db')),
      ];
    },
    { backend, after: async (d) => [await ok('sqlite3', [join(d, 'app.db'), 'PRAGMA integrity_check; SELECT count(*) FROM t;']), await sha(join(d, 'app.db'))] },
  );
}

export async function stormScenario(backend?: Backend): Promise<void> {
  const s = await setupStore(fillStorm, 'layerfs-storm-');
  const plain = join(s.dir, 'plain');
  cpSync(s.src, plain, { recursive: true });
  await mkdir(join(plain, 'new'));
  const plainLog = await storm(plain, 7, 1500);
  const plainTree = await walk(plain);
  await withMount(
    s,
    async (m) => {
    await mkdir(join(m.path, 'new'));
    const log = await storm(m.path, 7, 1500);
    assert.deepEqual(log, plainLog, 'every operation succeeds or fails the same way');
    assert.deepEqual(await walk(m.path), plainTree);
    assert.equal((await commitFuse(s.storePath, m.workspaceId)).outcome, 'Created');
    // A second storm after the commit, then commit again.
    const log2 = await storm(m.path, 8, 500);
    assert.deepEqual(log2, await storm(plain, 8, 500));
    assert.deepEqual(await walk(m.path), await walk(plain));
    assert.equal((await commitFuse(s.storePath, m.workspaceId)).outcome, 'Created');
    },
    backend ? { backend } : {},
  );
  const again = await mountBranch(s, backend ? { backend } : {});
  try {
    assert.deepEqual(await walk(again.path), await walk(plain));
  } finally {
    await unmountWorkspace(s.storePath, again.workspaceId, { discard: true });
    await stopDaemon(s.storePath, { discard: true });
  }
  assert.equal(s.client.verify().ok, true);
}
