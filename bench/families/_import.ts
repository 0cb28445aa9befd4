// The cells of the import families (init_namespace, import_large): layerfs importing the fixture
// directory as a genesis Layer, git adding and committing it, and the tar read floor.

import { warmCache } from '../lib/warm.js';
import type { CachedFixture } from '../fixtures/cache.js';
import type { RunContext, Row, Tier } from '../lib/types.js';

const CELLS = [
  { tool: 'layerfs', script: 'layerfs-init.ts' },
  { tool: 'git', script: 'git-init.ts' },
  { tool: 'tar', script: 'tar-read.ts' },
] as const;

export const IMPORT_PEERS = ['git', 'tar'];

/** One row per tool, each cell on a warm page cache. */
export function runImportCells(tier: Tier, ctx: RunContext, fx: CachedFixture): Row[] {
  return CELLS.map((c) => {
    warmCache(fx.dir);
    const row = ctx.runCell({ tier, tool: c.tool, script: c.script, args: ['--dir', fx.dir] });
    // Input size is a property of the fixture, not something each tool reports.
    row.files ??= fx.manifest.files;
    row.bytes ??= fx.manifest.bytes;
    return row;
  });
}
