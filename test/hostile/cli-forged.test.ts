// The CLI on forged Stores (issue: hostile input, items 7-11): typed errors with exit 1, never a
// stack trace or exit 70; verify exits 1 naming the violation and its state; export leaves no
// partial tree; cat of an extent bomb prints nothing past the recorded size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cli } from '../helpers/cli.js';
import { forgedStore, ContentForm, InodeKind, ObjectKind } from '../helpers/forge.js';

test('CLI: cat, export, ls and verify of forged Stores are typed errors (exit 1), not exit 70', async () => {
  const bomb = await forgedStore((f) => {
    const chunk = f.put(ObjectKind.Chunk, Buffer.from('0123456789'));
    let node = f.extentNode(0, Array(8).fill(chunk), Array(8).fill(10));
    for (let level = 1, len = 80; level <= 8; level++, len *= 8) node = f.extentNode(level, Array(8).fill(node), Array(8).fill(len));
    return new Map([
      [1, f.directory([['bomb', 2], ['loop', 3]])],
      [2, f.inode({ kind: InodeKind.File, parents: [1], size: 10, form: ContentForm.Extents, content: node })],
      [3, f.directory([['again', 3]], [1])],
    ]);
  });
  const s = ['--store', bomb.storePath];
  const cat = cli([...s, 'cat', 'main', 'bomb']);
  assert.equal(cat.code, 1, cat.stderr);
  assert.ok(cat.stdout.length <= 10, `cat printed ${cat.stdout.length} bytes of a 10-byte file`);
  assert.match(cat.stderr, /ERR_CORRUPT/);
  const j = cli([...s, '--json', 'cat', 'main', 'bomb']);
  assert.equal(j.code, 1);
  const out = join(bomb.dir, 'out');
  const ex = cli([...s, 'export', 'main', out]);
  assert.equal(ex.code, 1, ex.stderr);
  assert.doesNotMatch(ex.stderr, /\n\s+at /, 'a stack trace');
  assert.equal(existsSync(out), false);
  const v = cli([...s, 'verify']);
  assert.equal(v.code, 1);
  assert.match(v.stdout, /DAMAGED/);
  assert.match(v.stdout, /reached a second time.*reached from layer:/);
  assert.match(v.stdout, /where 10 are recorded.*reached from layer:/);
  const ls = cli([...s, 'ls', 'main', 'loop/again/again']);
  assert.ok(ls.code === 0 || ls.code === 1, ls.stderr);
  assert.doesNotMatch(ls.stderr, /\n\s+at /);
  const mem = cli(['--store', '/proc/self/mem', 'verify']);
  assert.equal(mem.code, 1);
  assert.match(mem.stderr + mem.stdout, /ERR_NOT_A_STORE|not a LayerFS Store/);
});
