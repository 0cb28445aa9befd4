// The cells of the import families (init_namespace, import_large): layerfs importing the fixture
// directory as a genesis Layer, git adding and committing it, and the tar read floor.

import { warmCache } from './warm.js';
import type { CachedFixture } from '../fixtures/cache.js';
import type { RunContext, Row, Tier } from './types.js';
import type { Cell } from './define-cell.js';
import { runWithPeers } from './run-cell.js';

export const IMPORT_PEERS = ['git', 'tar'];

/** One row per tool, each cell on a warm page cache. `cell`: the family's binding of lib/import-tree-cell.ts. */
export function runImportCells(tier: Tier, ctx: RunContext, fx: CachedFixture, cell: Cell): Row[] {
  const rows = runWithPeers(ctx, { tier, cell, args: { dir: fx.dir } }, () => warmCache(fx.dir));
  for (const row of rows) {
    // Input size is a property of the fixture, not something each tool reports.
    row.files ??= fx.manifest.files;
    row.bytes ??= fx.manifest.bytes;
  }
  return rows;
}
