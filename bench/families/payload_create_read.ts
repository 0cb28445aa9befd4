// Family payload_create_read: one random file of 1 / 10 / 100 / 500 MiB (1, 4 quick): import it,
// read it back whole, then random 4 KiB reads — against git (import = add + commit, read =
// cat-file) and, for random reads, pread(2) on the file itself.

import { DASH, fmtBytes, fmtInt, fmtMiB, fmtMs } from '../lib/format.js';
import { warmCache } from '../lib/warm.js';
import { ensureLargeFile } from '../fixtures/tree.js';
import type { Row, Table } from '../lib/types.js';
import { failedCells, fmtFineMs, fmtMBps, fmtSigned, fmtX, peerOf, ratio, x, type CampaignFamily } from '../lib/campaign-table.js';
import { useFixture } from '../lib/use-fixture.js';
import { payload } from '../cells/payload_create_read.js';
import { runWithPeers } from '../lib/run-cell.js';

const READS = 1000;

/** The command figures of a layerfs row (cat, 4 KiB cat, --version, node -e 0); dashes for git. */
function commandColumns(r: Row, git: Row | undefined): string[] {
  if (r.tool !== 'layerfs' || x(r, 'cmdReadMs') === undefined) return [DASH, DASH, DASH, DASH, DASH];
  return [
    fmtMs(x(r, 'cmdReadMs')),
    git ? fmtX(ratio(x(r, 'cmdReadMs'), x(git, 'readMs'))) : DASH,
    fmtMs(x(r, 'cmdRangeMs')),
    fmtMs(x(r, 'cmdStartMs')),
    fmtMs(x(r, 'nodeMs')),
  ];
}

const family: CampaignFamily = {
  name: 'payload_create_read',
  title: 'One large file: import, full read, random 4 KiB reads',
  description:
    'One file of seeded random (incompressible) bytes. layerfs: `Client.create` + `initLayerStack` ' +
    '("import"), close and reconnect, then `readFile` streamed to the end ("full read"), then random ' +
    `4 KiB reads at seeded offsets (${READS.toLocaleString('en-US')}): \`readFile(ref, path, { offset, ` +
    'length: 4096 })`, which loads only the extent nodes on the way and the chunks that overlap ' +
    '("bytes / read" is what it returned). "pread floor" is the same offsets read with pread(2) from the fixture file in the page cache (no Store). git: ' +
    '`git init && git add -A && git commit` ("import"), `git cat-file blob HEAD:large.bin | cat ' +
    '>/dev/null` ("full read"); git has no range read, so no random-read figure. "semantic" and ' +
    '"pages" are the import receipt\'s bytesInserted and allocatedGrowth; "stored" is Store file + WAL ' +
    'after close (`du -sb .git` for git). "peak RSS" is the cell process\'s after everything; "RSS ' +
    'import / read" its peak so far after the import and after the full read. "cat command" is ' +
    '`layerfs cat STATE large.bin | cat > /dev/null` run as a process, as a user runs it (compiled ' +
    'JavaScript; Node start and module loading included), against git\'s full read; "4 KiB cat ' +
    'command" is `layerfs cat --offset N --length 4096` and "--version" `layerfs --version` (medians ' +
    'of 5), with `node -e 0` as the floor of any Node command.',
  order: 40,
  peers: ['git'],
  tiers: (quick) => (quick ? [1, 4] : [1, 10, 100, 500]).map((mib) => ({ label: `${mib} MiB`, value: mib, unit: 'MiB' })),
  run(tier, ctx) {
    const fx = useFixture(ctx, ensureLargeFile(tier.value));
    return runWithPeers(ctx, { tier, cell: payload, args: { dir: fx.dir, reads: READS } }, () => warmCache(fx.dir));
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = [
      'tier', 'tool', 'import', 'import MB/s', 'import ×git', 'full read', 'read MB/s', 'read ×git',
      'reads', 'random read median', 'p90', 'bytes / read', 'pread floor', 'semantic', 'pages', 'stored', 'peak RSS',
      'RSS import / read', 'cat command', 'cat cmd ×git', '4 KiB cat command', '--version', 'node -e 0',
    ];
    const out = rows.map((r) => {
      const bad = failedCells(r, notes, headers.length, [r.tier, r.tool]);
      if (bad) return bad;
      const git = r.tool === 'git' ? undefined : peerOf(rows, r, 'git');
      const isL = r.tool === 'layerfs';
      return [
        r.tier,
        r.tool,
        fmtMs(r.ms),
        fmtMBps(x(r, 'importMBps')),
        git ? fmtX(ratio(r.ms, git.ms)) : DASH,
        fmtMs(x(r, 'readMs')),
        fmtMBps(x(r, 'readMBps')),
        git ? fmtX(ratio(x(r, 'readMs'), x(git, 'readMs'))) : DASH,
        isL ? fmtInt(x(r, 'randomReads')) : DASH,
        isL ? fmtFineMs(x(r, 'randomMedianMs')) : DASH,
        isL ? fmtFineMs(x(r, 'randomP90Ms')) : DASH,
        isL ? fmtBytes(x(r, 'streamedPerRead')) : DASH,
        isL ? fmtFineMs(x(r, 'floorMedianMs')) : DASH,
        isL ? fmtBytes(x(r, 'semanticGrowth')) : DASH,
        isL ? fmtSigned(x(r, 'allocatedGrowth')) : DASH,
        fmtBytes(r.storeBytes),
        fmtMiB(r.maxRssMiB),
        isL && x(r, 'rssAfterImportMiB') !== undefined ? `${fmtMiB(x(r, 'rssAfterImportMiB'))} / ${fmtMiB(x(r, 'rssAfterReadMiB'))}` : DASH,
        ...commandColumns(r, git),
      ];
    });
    return { headers, align: headers.map((_, i) => (i === 1 ? 'l' : 'r')), rows: out, notes };
  },
  chartDefs: [
    { stem: 'import', title: 'Import one file: wall time', y: 'ms', value: (r) => r.ms, legend: 'tool' },
    { stem: 'read', title: 'Full read (stream): wall time', y: 'ms', value: (r) => x(r, 'readMs'), legend: 'tool' },
    {
      stem: 'random',
      title: 'Random 4 KiB read (SDK: stream from start)',
      y: 'ms per read',
      values: (r) => [
        { series: 'layerfs readFile', y: x(r, 'randomMedianMs') },
        { series: 'pread floor', y: x(r, 'floorMedianMs') },
      ],
      filter: (r) => r.tool === 'layerfs',
    },
  ],
};

export default family;
