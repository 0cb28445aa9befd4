// Family import_large: one large random file (1 GiB; 16 MiB with --quick) imported as the genesis
// Layer — raw read/chunk/hash/store throughput — against git and the tar read floor.

import { ensureLargeFile } from '../fixtures/tree.js';
import type { Family } from '../lib/types.js';
import { IMPORT_PEERS, runImportCells } from '../lib/import-cells.js';
import { importLargeCell } from '../cells/import_large.js';
import { useFixture } from '../lib/use-fixture.js';

const family: Family = {
  name: 'import_large',
  title: 'Import one large random file',
  description:
    'Create a Store and import a directory holding one incompressible file (1 GiB; 16 MiB in quick ' +
    'runs): FastCDC chunking, BLAKE3 hashing and SQLite writes with no per-file overhead. Peers: ' +
    '`git add && git commit` of the same directory and the `tar` read floor.',
  order: 20,
  peers: IMPORT_PEERS,
  tiers: (quick) => [quick ? 16 : 1024].map((mib) => ({ label: `${mib} MiB`, value: mib, unit: 'MiB' })),
  run(tier, ctx) {
    const fx = useFixture(ctx, ensureLargeFile(tier.value));
    return runImportCells(tier, ctx, fx, importLargeCell);
  },
};

export default family;
