// Family remote_push_clone: remotes on PostgreSQL against git over the loopback (docs/REMOTES.md).
// Push of an N-file Store to an empty remote (goal ≤ 1.5× `git push` to a local bare repository),
// clone back (goal ≤ 1.5× `git clone --no-local`), push after a 10-file commit (goal: bytes ≤ 2×
// the commit's new bytes, ≤ 1 s).

import { countLabel, DASH, fmtBytes, fmtMs, fmtRatio } from '../lib/format.js';
import { firstLine } from '../lib/table.js';
import { cachedFixture, type CachedFixture } from '../fixtures/cache.js';
import { REAL_TREE_CACHE } from '../fixtures/real-tree.js';
import { treeParams, writeTree } from '../fixtures/tree.js';
import { startCluster } from '../../test/helpers/postgres.js';
import type { Family, Row, RunContext, Table, Tier } from '../lib/types.js';
import { useFixture } from '../lib/use-fixture.js';
import { remotePushClone } from '../cells/remote_push_clone.js';
import { runWithPeers } from '../lib/run-cell.js';
import { withPeers } from '../lib/define-cell.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const num = (x: unknown): number | undefined => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);

/** A tier's cells: layerfs and git, then again interleaved (lite) to the number of reps. */
function runTier(tier: Tier, ctx: RunContext, fx: CachedFixture, pgUrl: string): Row[] {
  // From 100,000 files the encrypted push/clone and the race (measured at 10,000) are left out.
  const args = { dir: fx.dir, files: tier.value, edits: 10, 'edit-bytes': 64, 'edit-mode': 'mixed', seed: 1, 'pg-url': pgUrl, lite: tier.value >= 100_000 };
  // The machine is shared: push and clone are also run again, interleaved with git's (layerfs,
  // git, layerfs, git, …), and each figure is the median of its runs.
  const rows = runWithPeers(ctx, { tier, cell: remotePushClone, args });
  const [git] = withPeers(remotePushClone).slice(1);
  const reps = Number(process.env.LAYERFS_BENCH_REMOTE_REPS ?? (tier.value >= 100_000 ? 1 : 3));
  const more: Row[][] = [[rows[0]!], [rows[1]!]];
  for (let i = 1; i < reps; i++) {
    more[0]!.push(ctx.runCell({ tier, cell: remotePushClone, args: { ...args, lite: true } }));
    more[1]!.push(ctx.runCell({ tier, cell: git as typeof remotePushClone, args, tool: 'git' }));
  }
  return more.map((runs) => {
    const row = { ...runs[0]!, extra: { ...runs[0]!.extra } };
    row.bytes ??= fx.manifest.bytes;
    if (runs.some((r) => r.status !== 'ok')) return runs.find((r) => r.status !== 'ok')!;
    for (const k of ['pushMs', 'cloneMs', 'cloneBareMs', 'push10Ms']) {
      const xs = runs.map((r) => num(r.extra[k])).filter((x): x is number => x !== undefined);
      if (xs.length) {
        row.extra[k] = median(xs);
        row.extra[`${k}Runs`] = xs;
      }
    }
    row.ms = num(row.extra.pushMs) ?? row.ms;
    return row;
  });
}

const family: Family = {
  name: 'remote_push_clone',
  title: 'Remotes: push, clone, incremental push (PostgreSQL vs git, loopback)',
  description:
    'layerfs: a throw-away PostgreSQL 15 cluster (fsync on, Unix socket) as the remote; push of the ' +
    'imported LayerStack to the empty remote ("push"), `Client.clone` into a new Store ("clone", ' +
    'every object re-hashed), then 10 files edited in a Workspace, committed, and Branch work pushed ' +
    '("push10"). git: `git push` of the same tree to an empty bare repository, `git clone --no-local` ' +
    '(with checkout; "clone objects" is --no-checkout), the same 10 edits committed and pushed. ' +
    '"push enc"/"clone enc": the same push and clone with an encrypted remote (AES-256-GCM per frame). ' +
    '"race 8": 8 processes with their own Stores push one commit each to one Branch at once, from the go signal ' +
    'until all exited: all land, reconciled; "strict": exactly one wins, 7 get HeadMoved. ' +
    'Bytes: layerfs counts stored bytes sent; git the growth of the bare repository.',
  order: 80,
  peers: ['git'],
  tiers: (quick) => (quick ? [1_000] : [10_000, 100_000]).map((n) => ({ label: countLabel(n), value: n, unit: 'files' })),
  async run(tier, ctx) {
    // The tree fixture is cached outside the repository (LAYERFS_BENCH_CACHE, else
    // ~/.cache/layerfs-bench), shared by every checkout: 100,000 files are not regenerated per clone.
    const p = treeParams(tier.value);
    const fx = useFixture(ctx, cachedFixture(`tree${p.files}`, p, (dir) => writeTree(dir, p), REAL_TREE_CACHE));
    // One PostgreSQL cluster for the tier's cells; each cell makes (and drops) its own databases.
    const pg = await startCluster({ durable: true });
    try {
      return runTier(tier, ctx, fx, pg.url);
    } finally {
      pg.stop();
    }
  },
  table(rows: Row[]): Table {
    const notes: string[] = [];
    const headers = ['tier', 'tool', 'push', '×git', 'push bytes', 'clone', '×git', 'clone objects', 'push10', 'push10 bytes', 'commit new bytes', 'push enc', 'clone enc', 'race 8', 'race 8 strict'];
    const out = rows.map((r) => {
      if (r.status !== 'ok') {
        notes.push(`${r.tool} @ ${r.tier}: ${r.status}: ${firstLine(r.message)}`);
        return [r.tier, r.tool, `${r.status} [${notes.length}]`, ...Array<string>(headers.length - 3).fill(DASH)];
      }
      const x = r.extra;
      const runs = (k: string) => (Array.isArray(x[k]) && (x[k] as number[]).length > 1 ? `${k.replace('MsRuns', '')} ${(x[k] as number[]).map((v) => fmtMs(v)).join(', ')}` : undefined);
      const each = ['pushMsRuns', 'cloneMsRuns'].map(runs).filter(Boolean);
      if (each.length) notes.push(`${r.tool} @ ${r.tier}, each run (median shown): ${each.join('; ')}`);
      const git = rows.find((q) => q.tool === 'git' && q.tier === r.tier && q.status === 'ok');
      const ratio = (k: string) => (r.tool === 'git' ? DASH : fmtRatio(num(x[k]) !== undefined && num(git?.extra[k]) ? num(x[k])! / num(git!.extra[k])! : undefined));
      return [
        r.tier,
        r.tool,
        fmtMs(num(x.pushMs)),
        ratio('pushMs'),
        fmtBytes(num(x.pushBytes)),
        fmtMs(num(x.cloneMs)),
        ratio('cloneMs'),
        r.tool === 'git' ? fmtMs(num(x.cloneBareMs)) : DASH,
        fmtMs(num(x.push10Ms)),
        fmtBytes(num(x.push10Bytes)),
        r.tool === 'git' ? DASH : fmtBytes(num(x.commitBytesInserted)),
        r.tool === 'git' ? DASH : fmtMs(num(x.pushEncMs)),
        r.tool === 'git' ? DASH : fmtMs(num(x.cloneEncMs)),
        r.tool === 'git' ? DASH : `${fmtMs(num(x.raceMs))} (${num(x.raceReconciles) ?? '?'} reconciles)`,
        r.tool === 'git' ? DASH : `${fmtMs(num(x.raceStrictMs))} (1 won, ${num(x.raceStrictHeadMoved) ?? '?'} HeadMoved)`,
      ];
    });
    return { headers, align: headers.map((_, i) => (i === 1 ? 'l' : 'r')), rows: out, notes };
  },
};

export default family;
