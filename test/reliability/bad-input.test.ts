/**
 * The bad-input catalogue: each case gets a typed error with a stable code, and the Store is
 * unchanged afterwards.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, isLayerFsError } from '../../lib/sdk/index.js';
import { tempDir } from '../helpers/tmp.js';
import { assertIntact } from '../helpers/integrity.js';

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
    const ws = c.createWorkspace('one', { at: join(dir, 'ws') });
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
