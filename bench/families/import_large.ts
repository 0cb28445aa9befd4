// Family import_large: one large random file (1 GiB; 64 MiB with --quick) imported as the genesis
// Layer — raw read/chunk/hash/store throughput — against git and the tar read floor.

import { warmCache } from '../lib/warm.js';
import { ensureLargeFile } from '../fixtures/tree.js';
import type { Family, Row } from '../lib/types.js';

const CELLS = [
  { tool: 'layerfs', script: 'layerfs-import-large.ts' },
  { tool: 'git', script: 'git-init.ts' },
  { tool: 'tar', script: 'tar-read.ts' },
] as const;

const family: Family = {
  name: 'import_large',
  title: 'Import one large random file',
  description:
    'Create a Store and import a directory holding one incompressible file (1 GiB; 16 MiB in quick ' +
    'runs): FastCDC chunking, BLAKE3 hashing and SQLite writes with no per-file overhead. Peers: ' +
    '`git add && git commit` of the same directory and the `tar` read floor.',
  order: 20,
  peers: ['git', 'tar'],
  tiers: (quick) => [quick ? 16 : 1024].map((mib) => ({ label: `${mib} MiB`, value: mib, unit: 'MiB' })),
  run(tier, ctx) {
    const fx = ensureLargeFile(tier.value);
    ctx.noteFixture({ name: fx.manifest.name, dir: fx.dir, reused: fx.reused, manifest: fx.manifest });
    if (!fx.reused) ctx.log(`  generated ${fx.manifest.name} in ${(fx.manifest.generateMs / 1000).toFixed(1)} s`);
    const rows: Row[] = [];
    for (const c of CELLS) {
      warmCache(fx.dir);
      const row = ctx.runCell({ tier, tool: c.tool, script: c.script, args: ['--dir', fx.dir] });
      row.files ??= fx.manifest.files;
      row.bytes ??= fx.manifest.bytes;
      rows.push(row);
    }
    return rows;
  },
};

export default family;
