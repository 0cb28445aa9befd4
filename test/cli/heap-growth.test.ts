// The command and the mount daemon grow their heaps alike (docs/DECISIONS.md, "A command's heap
// grows by 40 % between full collections"): the command keeps its own copy of the value, so
// that its start loads no other module, and this holds the copy to the daemon's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HEAP_GROWING_PERCENT as command } from '../../lib/cli/start.js';
import { HEAP_GROWING_PERCENT as daemon } from '../../lib/fuse/budget.js';

test('the command sets the heap growth the mount daemon is started with', () => {
  assert.equal(command, daemon);
  assert.ok(command > 0 && command <= 100, `a growth of ${command} % is not a bound`);
});
