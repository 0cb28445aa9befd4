// Family init_namespace: import a tree of N small files (the init fixture, see
// fixtures/layout.ts) as the genesis Layer of a new Store, against `git add -A && git commit`
// and the `tar` read floor, at 100 … 100,000 files.

import { countLabel } from '../lib/format.js';
import { warmCache } from '../lib/warm.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Family, Row } from '../lib/types.js';

const CELLS = [
  { tool: 'layerfs', script: 'layerfs-init.ts' },
  { tool: 'git', script: 'git-init.ts' },
  { tool: 'tar', script: 'tar-read.ts' },
] as const;

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
  peers: ['git', 'tar'],
  tiers: (quick) =>
    (quick ? [100, 1_000] : [100, 1_000, 10_000, 100_000]).map((n) => ({ label: countLabel(n), value: n, unit: 'files' })),
  run(tier, ctx) {
    const fx = ensureTree(tier.value);
    ctx.noteFixture({ name: fx.manifest.name, dir: fx.dir, reused: fx.reused, manifest: fx.manifest });
    if (!fx.reused) ctx.log(`  generated ${fx.manifest.name} in ${(fx.manifest.generateMs / 1000).toFixed(1)} s`);
    const rows: Row[] = [];
    for (const c of CELLS) {
      warmCache(fx.dir);
      const row = ctx.runCell({ tier, tool: c.tool, script: c.script, args: ['--dir', fx.dir] });
      // Input size is a property of the fixture, not something each tool reports.
      row.files ??= fx.manifest.files;
      row.bytes ??= fx.manifest.bytes;
      rows.push(row);
    }
    return rows;
  },
};

export default family;
