// Cell: the read floor — `tar cf - DIR | cat > /dev/null`. The pipe matters: GNU tar notices an
// archive written straight to /dev/null and then skips reading file contents.
//   node --import tsx bench/cells/tar-read.ts --dir FIXTURE --tier 1000

import { parseArgs } from 'node:util';
import { emit, fail, round1, shq, timeExternal } from '../lib/cell.js';

const CELL = 'tar-read';
const { values: a } = parseArgs({
  options: { dir: { type: 'string' }, tmp: { type: 'string' }, tier: { type: 'string', default: '?' } },
});
const tier = a.tier!;

try {
  if (a.dir === undefined) throw new Error('--dir is required');
  const run = timeExternal(['sh', '-c', `tar cf - -C ${shq(a.dir)} . | cat > /dev/null`]);
  emit({ cell: CELL, tier, ms: round1(run.ms), maxRssMiB: round1(run.maxRssMiB) });
} catch (err) {
  fail(CELL, tier, err);
}
