/**
 * The bad-input catalogue: each case gets a typed error with a stable code, and the Store is
 * unchanged afterwards.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Client, isLayerFsError, type LayerFsError } from '../../lib/sdk/index.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

function fingerprint(c: Client) {
  return JSON.stringify({ s: c.layerStacks(), l: c.layers(), b: c.branches(), w: c.workspaces(), o: c.info().objects });
}

test('catalogue of bad input: typed errors, Store unchanged', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  // Odd but legal file names are stored exactly.
  const odd = [Buffer.from([0x66, 0xff, 0x80]), Buffer.from('x'.repeat(255)), Buffer.from('new\nline'), Buffer.from('-leading-dash'), Buffer.from(' space ')];
  for (const n of odd) writeFileSync(Buffer.concat([Buffer.from(src + '/'), n]), n);
  symlinkSync('/etc', join(src, 'escape'));
  symlinkSync('../../..', join(src, 'up'));
  const c = Client.create(join(dir, 's.sqlite'));
  try {
    const layer = (await c.initLayerStack({ name: 'p', source: src })).layer.id;
    const names = c.ls('p').map((e) => e.nameBytes);
    for (const n of odd) assert.ok(names.some((x) => x.equals(n)), `stored ${JSON.stringify(n.toString())}`);
    c.forkBranch({ name: 'one', layer });
    c.forkBranch({ name: 'two', layer });
    const before = fingerprint(c);
    const cases: [string, () => unknown, string][] = [
      ['non-UTF-8 LayerStack name', () => c.initLayerStack({ name: Buffer.from([0xff]).toString('latin1'), empty: true }), 'ERR_INVALID_NAME'],
      ['Branch name with newline', () => c.forkBranch({ name: 'a\nb', layer }), 'ERR_INVALID_NAME'],
      ['Branch name with leading dash', () => c.forkBranch({ name: '-x', layer }), 'ERR_INVALID_NAME'],
      ['64-character name', () => c.forkBranch({ name: 'a'.repeat(64), layer }), 'ERR_INVALID_NAME'],
      ['.. in a state path', () => c.cat('p', 'a/../../etc/passwd'), 'ERR_UNSAFE_PATH'],
      ['absolute state path', () => c.ls('p', '/etc'), 'ERR_UNSAFE_PATH'],
      ['NUL in a state path', () => c.ls('p', 'a\0b'), 'ERR_UNSAFE_PATH'],
      ['256-byte name in a path', () => c.ls('p', 'y'.repeat(256)), 'ERR_INVALID_ARGUMENT'],
      ['cat of a symlink', () => c.cat('p', 'escape'), 'ERR_INVALID_ARGUMENT'],
      ['id matching nothing', () => c.ls('abcdef0123'), 'ERR_NOT_FOUND'],
      ['id prefix matching several Branches', () => c.log(c.branches()[0]!.id.slice(0, 6)), 'ERR_AMBIGUOUS_ID'],
      ['unknown Branch', () => c.createWorkspace('nope', { at: join(dir, 'w') }), 'ERR_NOT_FOUND'],
      ['Workspace at a non-empty directory', () => c.createWorkspace('one', { at: src }), 'ERR_NOT_EMPTY'],
      ['fork from a Commit not in the Branch', () => c.forkBranch({ name: 'z', branch: 'one', commit: 'ffffffff' }), 'ERR_NOT_FOUND'],
      ['export over a non-empty directory', () => c.export('p', src), 'ERR_NOT_EMPTY'],
      ['empty state reference', () => c.ls(''), 'ERR_INVALID_ARGUMENT'],
    ];
    for (const [what, fn, code] of cases) {
      let err: unknown;
      try {
        await fn();
      } catch (e) {
        err = e;
      }
      assert.ok(isLayerFsError(err), `${what}: expected a LayerFsError, got ${String(err)}`);
      assert.equal((err as { code: string }).code, code, what);
    }
    assert.equal(fingerprint(c), before);

    // Stored symlinks pointing outside are recreated as symlinks; nothing is written through them.
    const ws = await c.createWorkspace('one', { at: join(dir, 'ws') });
    assert.deepEqual(readdirSync(join(dir, 'ws')).length, odd.length + 2);
    assert.equal(existsSync(join(dir, 'ws-escape-check')), false);
    const out = join(dir, 'out');
    c.export('p', out);
    assert.equal(execFileSync('readlink', [join(out, 'up')]).toString().trim(), '../../..');
    await c.endWorkspace(ws.id, { discard: true });
    assertIntact(c);
  } finally {
    c.close();
  }
});

test('an immutable Store file (read-only even for root): writes fail with ERR_READ_ONLY, reads work', async () => {
  const dir = tempDir();
  const store = join(dir, 's.sqlite');
  Client.create(store).close();
  execFileSync('chattr', ['+i', store]);
  try {
    const c = Client.connect(store);
    try {
      await assert.rejects(c.initLayerStack({ name: 'x', empty: true }), { code: 'ERR_READ_ONLY' });
      assert.deepEqual(c.layerStacks(), []);
    } finally {
      c.close();
    }
  } finally {
    execFileSync('chattr', ['-i', store]);
  }
  const c = Client.connect(store);
  assertIntact(c);
  c.close();
});

/** Runs the CLI from sources in a child (optionally as another user), with a hard time limit. */
function cliAs(args: string[], opts: { uid?: number; timeoutMs?: number } = {}): { code: number | null; json: any; stderr: string; timedOut: boolean } {
  const r = spawnSync(process.execPath, nodeArgs('lib/cli/bin.ts', '--json', ...args), {
    cwd: root,
    encoding: 'utf8',
    timeout: opts.timeoutMs ?? 60_000,
    ...(opts.uid !== undefined ? { uid: opts.uid, gid: opts.uid, env: { ...process.env, HOME: '/tmp' } } : {}),
  });
  let json: any;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { code: r.status, json, stderr: r.stderr, timedOut: (r.error as NodeJS.ErrnoException | undefined)?.code === 'ETIMEDOUT' };
}

/** Digest of a file's bytes and of its WAL, if any: "unchanged" means byte for byte. */
function digest(path: string): string {
  const h = createHash('sha256').update(readFileSync(path));
  if (existsSync(`${path}-wal`)) h.update(readFileSync(`${path}-wal`));
  return h.digest('hex');
}

function expectTyped(fn: () => unknown, code: string, what: string): LayerFsError {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  assert.ok(isLayerFsError(err), `${what}: expected a LayerFsError, got ${String(err)}`);
  assert.equal(err.code, code, `${what}: ${err.message}`);
  return err;
}

async function smallStore(dir: string): Promise<{ store: string; src: string }> {
  const src = join(dir, 'src');
  mkdirSync(src);
  for (let i = 0; i < 120; i++) writeFileSync(join(src, `f${i}`), seededBytes(i + 1, 50 + i * 40));
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  await c.initLayerStack({ name: 'p', source: src });
  c.close();
  return { store, src };
}

test('special files given as the Store: a FIFO does not hang; each is ERR_NOT_A_STORE with the path', () => {
  const dir = tempDir();
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  const notStore = join(dir, 'text');
  writeFileSync(notStore, 'x'.repeat(4096));
  const cases: [string, string][] = [
    [fifo, 'a FIFO'],
    [dir, 'a directory'],
    ['/dev/null', 'a character device'],
    [notStore, 'a text file'],
  ];
  for (const [path, what] of cases) {
    const e = expectTyped(() => Client.connect(path), 'ERR_NOT_A_STORE', what);
    assert.equal(e.details.path, path, what);
  }
  // The CLI too, in a child with a time limit: a hang fails instead of stalling the suite.
  const r = cliAs(['db', 'connect', fifo], { timeoutMs: 60_000 });
  assert.equal(r.timedOut, false, 'db connect on a FIFO hung');
  assert.equal(r.code, 1);
  assert.equal(r.json?.error?.code, 'ERR_NOT_A_STORE');
  assert.equal(r.json?.error?.path, fifo);
  assert.equal(statSync(fifo).isFIFO(), true);
});

test('a truncated Store: ERR_CORRUPT (or ERR_NOT_A_STORE below the header) with the path; the file is left as it is', async () => {
  const dir = tempDir();
  const { store } = await smallStore(dir);
  const size = statSync(store).size;
  const copy = join(dir, 'cut.sqlite');
  // Cuts inside the header, at a page boundary, mid-page and one byte short (seeded choices).
  const cuts = [0, 50, 4096, Math.floor(size / 3), Math.floor(size / 2) + 777, size - 1];
  for (const cut of cuts) {
    copyFileSync(store, copy);
    truncateSync(copy, cut);
    const before = digest(copy);
    let err: unknown;
    try {
      const c = Client.connect(copy);
      try {
        c.ls('p');
        c.verify();
        assert.fail(`a Store cut at ${cut} of ${size} bytes opened and verified`);
      } finally {
        c.close();
      }
    } catch (e) {
      err = e;
    }
    assert.ok(isLayerFsError(err), `cut at ${cut}: ${String(err)}`);
    assert.ok(err.code === (cut < 100 ? 'ERR_NOT_A_STORE' : 'ERR_CORRUPT'), `cut at ${cut}: ${err.code} ${err.message}`);
    assert.equal(err.details.path, copy, `cut at ${cut}`);
    assert.equal(digest(copy), before, `cut at ${cut}: the damaged file was modified`);
  }
  const c = Client.connect(store);
  assertIntact(c);
  c.close();
});

test('ids matching several things: ERR_AMBIGUOUS_ID lists details.candidates', async () => {
  const dir = tempDir();
  const { store, src } = await smallStore(dir);
  const c = Client.connect(store);
  try {
    const other = await c.initLayerStack({ name: 'q', source: src });
    const layer = c.layers({ layerStack: 'p' })[0]!.id;
    // The same Branch name in two LayerStacks.
    const a = c.forkBranch({ name: 'main', layer });
    const b = c.forkBranch({ name: 'main', layer: other.layer.id });
    const byName = expectTyped(() => c.log('main'), 'ERR_AMBIGUOUS_ID', 'Branch name in two LayerStacks');
    assert.deepEqual([...(byName.details.candidates as string[])].sort(), [a.id, b.id].sort());
    // A hex prefix shared by several Branch ids (ids begin with their creation time).
    let n = 0;
    const ids = [a.id, b.id];
    let common = '';
    for (; n < 40; n++) {
      ids.push(c.forkBranch({ name: `b${n}`, layer }).id);
      const p = ids[ids.length - 1]!.slice(0, 4);
      if (ids.filter((x) => x.startsWith(p)).length > 1) {
        common = p;
        break;
      }
    }
    assert.ok(common, 'no two Branch ids share a 4-digit prefix');
    const before = fingerprint(c);
    const byPrefix = expectTyped(() => c.log(common), 'ERR_AMBIGUOUS_ID', 'Branch id prefix');
    const cands = byPrefix.details.candidates as string[];
    assert.ok(cands.length >= 2 && cands.length <= 10);
    assert.deepEqual(
      [...cands].sort(),
      c
        .branches()
        .map((x) => x.id)
        .filter((x) => x.startsWith(common))
        .sort()
        .slice(0, 10),
    );
    // The same through the CLI: the JSON error carries the candidates.
    const r = cliAs(['--store', store, 'log', 'main']);
    assert.equal(r.json?.error?.code, 'ERR_AMBIGUOUS_ID');
    assert.equal(r.json?.error?.candidates?.length, 2);
    assert.equal(fingerprint(c), before);
  } finally {
    assertIntact(c);
    c.close();
  }
});

test('a Workspace directory deleted behind the tool: status and commit ERR_NOT_FOUND with its path; end --discard cleans up', async () => {
  const dir = tempDir();
  const { store } = await smallStore(dir);
  const c = Client.connect(store);
  try {
    c.forkBranch({ name: 'w', layer: c.layers()[0]!.id });
    const ws = await c.createWorkspace('w', { at: join(dir, 'ws') });
    writeFileSync(join(ws.path, 'new.txt'), 'new');
    rmSync(ws.path, { recursive: true, force: true });
    const before = digest(store);
    const fp = fingerprint(c);
    for (const [what, fn] of [
      ['status', () => c.workspaceStatus(ws.id)],
      ['commit', () => c.commitWorkspace(ws.id)],
    ] as const) {
      let err: unknown;
      try {
        await fn();
      } catch (e) {
        err = e;
      }
      assert.ok(isLayerFsError(err, 'ERR_NOT_FOUND'), `${what}: ${String(err)}`);
      assert.equal(err.details.path, ws.path, what);
    }
    assert.equal(fingerprint(c), fp);
    assert.deepEqual(c.log('w'), []);
    assert.equal(digest(store), before);
    assert.equal((await c.endWorkspace(ws.id, { discard: true })).outcome, 'Ended');
    assert.deepEqual(c.workspaces(), []);
    // The Branch is fine: a new Workspace commits normally.
    const ws2 = await c.createWorkspace('w', { at: join(dir, 'ws2') });
    writeFileSync(join(ws2.path, 'again.txt'), 'again');
    assert.equal((await c.commitWorkspace(ws2.id)).outcome, 'Created');
    assertIntact(c);
  } finally {
    c.close();
  }
});

const NOBODY = 65534;

test('as an unprivileged user: unreadable files fail the import typed with their path; a read-only Store refuses writes', async () => {
  const dir = tempDir();
  const { store, src } = await smallStore(dir);
  // The Store and its directory belong to the unprivileged user; the sources stay root's.
  const home = join(dir, 'home');
  mkdirSync(home);
  const own = join(home, 's.sqlite');
  copyFileSync(store, own);
  for (const p of [dir, home, own]) chownSync(p, NOBODY, NOBODY);
  chmodSync(dir, 0o755);
  writeFileSync(join(src, 'secret'), 'secret');
  chmodSync(join(src, 'secret'), 0o600);
  mkdirSync(join(src, 'closed'));
  writeFileSync(join(src, 'closed', 'inside'), 'x');
  chmodSync(join(src, 'closed'), 0o700);
  const before = digest(own);
  const r = cliAs(['--store', own, 'layerstack', 'init', '--name', 'n', src], { uid: NOBODY });
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json?.error?.code, 'ERR_NATIVE_IO', r.stderr);
  assert.equal(r.json?.error?.errno, 'EACCES');
  assert.ok([join(src, 'secret'), join(src, 'closed')].includes(r.json?.error?.path), `path ${r.json?.error?.path}`);
  assert.equal(digest(own), before);
  chmodSync(join(src, 'secret'), 0o644);
  chmodSync(join(src, 'closed'), 0o755);

  // A read-only Store file (mode 0444, owner without write permission).
  chmodSync(own, 0o444);
  const w = cliAs(['--store', own, 'layerstack', 'init', '--name', 'n', '--empty'], { uid: NOBODY });
  assert.equal(w.json?.error?.code, 'ERR_READ_ONLY', w.stderr);
  assert.equal(w.json?.error?.path, own);
  const q = cliAs(['--store', own, 'query', 'layerstacks'], { uid: NOBODY });
  assert.equal(q.code, 0, q.stderr);
  const v = cliAs(['--store', own, 'verify'], { uid: NOBODY });
  assert.equal(v.code, 0, v.stderr);
  assert.equal(digest(own), before);
  chmodSync(own, 0o644);
  const c = Client.connect(own);
  assert.deepEqual(
    c.layerStacks().map((s) => s.name),
    ['p'],
  );
  assertIntact(c);
  c.close();
});

test('special files, a newer format version and symlinks pointing outside: typed, nothing written outside the target', async () => {
  const dir = tempDir();
  const src = join(dir, 'src');
  const outside = join(dir, 'outside');
  mkdirSync(src);
  mkdirSync(outside);
  writeFileSync(join(outside, 'keep.txt'), 'outside\n');
  execFileSync('mkfifo', [join(src, 'pipe')]);
  execFileSync('mknod', [join(src, 'null'), 'c', '1', '3']);
  symlinkSync(outside, join(src, 'abs-out'));
  symlinkSync('../outside', join(src, 'rel-out'));
  writeFileSync(join(src, 'plain.txt'), 'plain\n');
  const store = join(dir, 's.sqlite');
  const c = Client.create(store);
  const outsideBefore = () => JSON.stringify(readdirSync(outside).map((n) => [n, readFileSync(join(outside, n), 'utf8')]));
  const sentinel = outsideBefore();
  try {
    // Importing special files never opens them for reading (a FIFO would block).
    const layer = (await c.initLayerStack({ name: 'p', source: src })).layer.id;
    const kinds = Object.fromEntries(c.ls('p').map((e) => [e.name, e.kind]));
    assert.deepEqual(kinds, { 'abs-out': 'symlink', null: 'chardev', pipe: 'fifo', 'plain.txt': 'file', 'rel-out': 'symlink' });
    const before = digest(store);
    for (const name of ['pipe', 'null', 'abs-out']) expectTyped(() => c.cat('p', name), 'ERR_INVALID_ARGUMENT', `cat of ${name}`);
    expectTyped(() => c.ls('p', 'abs-out/keep.txt'), 'ERR_NOT_A_DIRECTORY', 'a path through a stored symlink');
    assert.equal(digest(store), before);
    // Export and materialize recreate the links as links and write nothing through them.
    const out = join(dir, 'out');
    c.export('p', out);
    assert.ok(statSync(join(out, 'pipe')).isFIFO());
    assert.equal(execFileSync('readlink', [join(out, 'abs-out')]).toString().trim(), outside);
    c.forkBranch({ name: 'b', layer });
    const ws = await c.createWorkspace('b', { at: join(dir, 'ws') });
    assert.equal(execFileSync('readlink', [join(ws.path, 'rel-out')]).toString().trim(), '../outside');
    await c.endWorkspace(ws.id, { discard: true });
    assert.equal(outsideBefore(), sentinel);
    assertIntact(c);
  } finally {
    c.close();
  }
  // A Store of a newer format version: refused, typed, with its path, and left as it is.
  const newer = join(dir, 'newer.sqlite');
  copyFileSync(store, newer);
  const db = new Database(newer);
  db.pragma('user_version = 99');
  db.close();
  const before = digest(newer);
  const e = expectTyped(() => Client.connect(newer), 'ERR_UNSUPPORTED_FORMAT', 'newer format');
  assert.equal(e.details.path, newer);
  assert.equal(digest(newer), before);
});
