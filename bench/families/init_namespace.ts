// Family init_namespace: import a tree of N small files (the init fixture, see
// fixtures/layout.ts) as the genesis Layer of a new Store, against `git add -A && git commit`
// and the `tar` read floor, at 100 … 100,000 files.

import { countLabel } from '../lib/format.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Family } from '../lib/types.js';
import { IMPORT_PEERS, runImportCells } from '../lib/import-cells.js';
import { importTree } from '../cells/init_namespace.js';
import { useFixture } from '../lib/use-fixture.js';

const family: Family = {
  name: 'init_namespace',
  title: 'Import a tree of small files',
  description:
    'Create a Store and import a directory as the genesis Layer (`Client.create` + `initLayerStack`), ' +
    'against `git init && git add -A && git commit` (loose objects, auto-gc off) and the read floor ' +
    '`tar cf - DIR | cat > /dev/null`. Fixture: N files, 100 per directory, half text / half random, ' +
    'log-normal sizes (median 2 KiB, ≈4.3 kB mean, ≈430 MB at 100,000 files). "stored" is the Store ' +
    'file + WAL for layerfs, `du -sb .git` for git.',
  order: 10,
  peers: IMPORT_PEERS,
  tiers: (quick) =>
    (quick ? [100, 1_000] : [100, 1_000, 10_000, 100_000]).map((n) => ({ label: countLabel(n), value: n, unit: 'files' })),
  run(tier, ctx) {
    const fx = useFixture(ctx, ensureTree(tier.value));
    return runImportCells(tier, ctx, fx, importTree);
  },
};

export default family;
