// Which `layerfs cat` command lines are read without commander (lib/cli/plain-cat.ts): the plain
// shape only; everything else goes to commander, which answers it as before.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { plainCat } from '../../lib/cli/plain-cat.js';

test('plain cat command lines are read with their program flags and range', () => {
  assert.deepEqual(plainCat(['cat', 'demo', 'a.txt']), { globals: { json: false, quiet: undefined, store: undefined }, state: 'demo', path: 'a.txt', offset: undefined, length: undefined });
  assert.deepEqual(plainCat(['--json', '-q', '--store', 's.sqlite', 'cat', '--offset', '3', 'demo', 'a/b.txt', '--length=4']), {
    globals: { json: true, quiet: true, store: 's.sqlite' },
    state: 'demo',
    path: 'a/b.txt',
    offset: '3',
    length: '4',
  });
  assert.equal(plainCat(['--store=x', 'cat', 'demo', 'a'])?.globals.store, 'x');
});

test('every other command line is left to commander', () => {
  for (const args of [
    [],
    ['cat'],
    ['cat', 'demo'],
    ['cat', 'demo', 'a', 'b'],
    ['cat', '--help'],
    ['cat', '-h', 'demo', 'a'],
    ['help', 'cat'],
    ['--help'],
    ['-V'],
    ['cat', 'demo', '--', '-a'],
    ['cat', 'demo', '-'],
    ['cat', '--json', 'demo', 'a'],
    ['cat', '--store', 's', 'demo', 'a'],
    ['--offset', '1', 'cat', 'demo', 'a'],
    ['cat', 'demo', 'a', '--offset'],
    ['cat', 'demo', 'a', '--nosuch'],
    ['ls', 'demo', 'a'],
    ['--store', 'cat', 'demo', 'a'],
    ['log', 'cat', 'demo'],
  ]) {
    assert.equal(plainCat(args), undefined, args.join(' '));
  }
});
