// Family store_gc (issue 23): what `db gc` reclaims and what it costs. Tier "history": Branches ×
// Commits of the fixtures/gc-history.ts history, all but a few Branches deleted, then `db gc
// --vacuum`: the Store against a fresh Store holding only the kept histories, and gc's time
// against `git reflog expire --expire=now --all && git gc --prune=now` on the same history.
// Tier "no garbage": gc of an imported tree fixture with nothing to reclaim, against `verify`.

import { countLabel, DASH, fmtBytes, fmtInt, fmtMiB, fmtMs } from '../lib/format.js';
import { firstLine } from '../lib/table.js';
import { warmCache } from '../lib/warm.js';
import { ensureTree } from '../fixtures/tree.js';
import type { Family, Row, Table } from '../lib/types.js';
import { useFixture } from '../lib/use-fixture.js';
import { gcBig, gcHistory } from '../cells/store_gc.js';
import { runWithPeers } from '../lib/run-cell.js';

const num = (x: unknown): number | undefined => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);
const fx3 = (v: number | undefined) => (v === undefined ? DASH : `${v.toFixed(3)}×`);

const family: Family = {
  name: 'store_gc',
  title: 'Garbage collection: space back, and its cost',
  description:
    'history: a base tree (two 2 MiB text files, 100 small text files) and B Branches × C Commits (50 × 20; 10 × 5 quick), ' +
    'each Commit a 64-byte overwrite in a large file (its other chunks shared across Branches), a line appended to two small ' +
    'text files (deltas), and every 4th Commit a new 1 MiB random file; each Branch committed through a materialized Workspace. ' +
    'Then all but 5 Branches (1 quick) deleted and `db gc --vacuum`: "gc" its time without the vacuum, "vacuum" apart; ' +
    '"Store" the file after it, "fresh" a new Store holding only the kept Branches (same trees: every kept Commit has the ' +
    'same root id in both, and verify passes), "× fresh" their ratio (goal ≤ 1.1×). git: the same history, `git branch -D` ' +
    'of the same Branches, then `git reflog expire --expire=now --all && git gc --prune=now` timed ("× git" = layerfs gc over ' +
    'that, goal ≤ 1×). no garbage: the tree fixture (100,000 files; 10,000 quick) imported, then `verify` and `db gc` ' +
    '(nothing to reclaim) timed; "× verify" is gc over verify (goal ≤ 0.5×). RSS: a generated Store of 10 million objects ' +
    '(200,000 quick; fixtures/gc-store.ts: a Layer and 20 Branches × 10 Commits, each Commit adding a file of unique 16-byte chunks ' +
    'under an extent tree, 10 Branches deleted; generated once, verified, cached), `db gc` of a copy in a process of its own: ' +
    '"peak RSS" is that process\'s (goal ≤ 256 MiB); then every kept chunk must be there and every deleted one gone.',
  order: 56,
  peers: ['git'],
  tiers: (quick) => [
    { label: quick ? 'history 10×5' : 'history 50×20', value: quick ? 50 : 1000, unit: 'commits' },
    { label: `no garbage ${countLabel(quick ? 10_000 : 100_000)}`, value: quick ? 10_000 : 100_000, unit: 'files' },
    { label: quick ? 'RSS 200k objects' : 'RSS 10M objects', value: quick ? 200_000 : 10_000_000, unit: 'objects' },
  ],
  run(tier, ctx) {
    if (tier.unit === 'objects') {
      // fixtures/gc-store.ts: half the objects in deleted Branches. The collected Store is
      // verified whole at 200,000 objects; at 10 million its chunks are counted by kind.
      return [ctx.runCell({ tier, cell: gcBig, args: { objects: String(tier.value), verify: ctx.quick ? '1' : '0' } })];
    }
    if (tier.unit === 'files') {
      const fx = useFixture(ctx, ensureTree(tier.value));
      warmCache(fx.dir);
      const r = ctx.runCell({ tier, cell: gcHistory, args: { mode: 'nogarbage', dir: fx.dir } });
      r.files ??= fx.manifest.files;
      return [r];
    }
    const [b, c, k] = ctx.quick ? ['10', '5', '1'] : ['50', '20', '5'];
    const args = { branches: b, commits: c, keep: k };
    return [
      ...runWithPeers(ctx, { tier, cell: gcHistory, args: { mode: 'history', ...args } }),
    ];
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = ['tier', 'tool', 'gc', 'vacuum', '× git', 'before', 'Store', 'fresh', '× fresh', 'verify', '× verify', 'objects', 'peak RSS'];
    const out = rows.map((r) => {
      if (r.status !== 'ok') {
        notes.push(`${r.tool} @ ${r.tier}: ${r.status}: ${firstLine(r.message)}`);
        return [r.tier, r.tool, `${r.status} [${notes.length}]`, ...Array<string>(headers.length - 3).fill(DASH)];
      }
      const x = r.extra;
      const git = r.tool === 'layerfs' ? rows.find((g) => g.tool === 'git' && g.tier === r.tier && g.status === 'ok') : undefined;
      return [
        r.tier,
        r.tool,
        fmtMs(r.ms),
        r.tool === 'layerfs' && num(x.vacuumMs) !== undefined ? fmtMs(num(x.vacuumMs)) : DASH,
        git && r.ms !== undefined && git.ms ? fx3(r.ms / git.ms) : DASH,
        fmtBytes(num(x.beforeBytes)),
        fmtBytes(r.storeBytes),
        fmtBytes(num(x.freshBytes)),
        fx3(num(x.overFresh)),
        fmtMs(num(x.verifyMs)),
        fx3(num(x.gcOverVerify)),
        fmtInt(r.objects),
        fmtMiB(r.maxRssMiB),
      ];
    });
    return { headers, align: headers.map((_, i) => (i < 2 ? 'l' : 'r')), rows: out, notes };
  },
};

export default family;
