// The headline table at the top of docs/BENCHMARKS.md: a few figures, each taken from one
// family's rows of the same run, at the largest tier that run has (quick runs have smaller tiers,
// and the label says which). A figure whose family did not run, or failed, is left out.

import { fmtBytes, fmtMs } from '../lib/format.js';
import type { Results } from '../lib/results.js';
import type { Row } from '../lib/types.js';

function num(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}

function fmtX(r: number | undefined): string {
  if (r === undefined || !Number.isFinite(r)) return '—';
  // Tiny ratios (a 4 KiB edit against a whole file) read better as "1/N".
  return r >= 100 ? `${r.toFixed(0)}×` : r >= 10 ? `${r.toFixed(1)}×` : r >= 0.01 ? `${r.toFixed(2)}×` : `1/${Math.round(1 / r).toLocaleString('en-US')}`;
}

function fine(ms: number | undefined): string {
  if (ms === undefined) return '—';
  return ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : ms < 10 ? `${ms.toFixed(2)} ms` : fmtMs(ms);
}

const mbs = (x: number | undefined) => (x === undefined ? '—' : `${x.toFixed(0)} MB/s`);

interface Line {
  what: string;
  layerfs: string;
  peer: string;
  ratio: string;
  source: string;
}

/** The lookups every figure uses over the ok rows of one run. */
function lookups(results: Results) {
  const rows = results.rows.filter((r) => r.status === 'ok');
  return {
    of: (family: string, tool?: string, cell?: string) =>
      rows.filter((r) => r.family === family && (tool === undefined || r.tool === tool) && (cell === undefined || r.cell === cell)),
    largest: (rs: Row[]) => rs.reduce<Row | undefined>((m, r) => (m === undefined || r.tierValue > m.tierValue ? r : m), undefined),
    smallest: (rs: Row[]) => rs.reduce<Row | undefined>((m, r) => (m === undefined || r.tierValue < m.tierValue ? r : m), undefined),
    at: (rs: Row[], tier: string | undefined) => rs.find((r) => r.tier === tier),
    x: (r: Row | undefined, k: string) => (r === undefined ? undefined : num(r.extra[k])),
    ratio: (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && b > 0 ? a / b : undefined),
  };
}

type Lookups = ReturnType<typeof lookups>;

// Import of the small-file tree, against git and tar.
function importTree({ of, largest, at, ratio }: Lookups, out: Line[]): void {
  const initL = largest(of('init_namespace', 'layerfs'));
  if (initL) {
    const g = at(of('init_namespace', 'git'), initL.tier);
    const t = at(of('init_namespace', 'tar'), initL.tier);
    out.push({
      what: `Import ${initL.tier} files (${fmtBytes(initL.bytes)})`,
      layerfs: fmtMs(initL.ms),
      peer: `git ${fmtMs(g?.ms)}; tar read ${fmtMs(t?.ms)}`,
      ratio: `${fmtX(ratio(initL.ms, g?.ms))} git; ${fmtX(ratio(initL.ms, t?.ms))} tar`,
      source: 'init_namespace',
    });
  }
}

// Commit of 10 files in the largest Workspace, against its import and git.
function workspaceCommit({ of, largest, at, x, ratio }: Lookups, out: Line[]): void {
  const wc = largest(of('workspace_commit', 'layerfs'));
  if (wc) {
    const g = at(of('workspace_commit', 'git'), wc.tier);
    out.push({
      what: `Commit 10 edited files in a ${wc.tier}-file Workspace (commit / init)`,
      layerfs: `${fmtMs(wc.ms)} (${fmtX(x(wc, 'commitPerInit'))} of init ${fmtMs(x(wc, 'initMs'))})`,
      peer: `git commit -a ${fmtMs(g?.ms)}`,
      ratio: `${fmtX(ratio(wc.ms, g?.ms))} git`,
      source: 'workspace_commit',
    });
  }
}

// Fork on the smallest and the largest tree.
function fork({ of, largest, smallest, ratio }: Lookups, out: Line[]): void {
  const forks = of('branch_fork', 'layerfs');
  const f0 = smallest(forks);
  const f1 = largest(forks);
  if (f0 && f1 && f0 !== f1) {
    out.push({
      what: `Fork a Branch: ${f0.tier} vs ${f1.tier} files`,
      layerfs: `${fine(f0.ms)} vs ${fine(f1.ms)}`,
      peer: '—',
      ratio: `${fmtX(ratio(f1.ms, f0.ms))} (goal 1×)`,
      source: 'branch_fork',
    });
  }
}

// Raw import throughput.
function importLarge({ of, largest, at, ratio }: Lookups, out: Line[]): void {
  const il = largest(of('import_large', 'layerfs'));
  if (il) {
    const g = at(of('import_large', 'git'), il.tier);
    const mb = (r: Row | undefined) => (r?.bytes !== undefined && r.ms ? r.bytes / 1e6 / (r.ms / 1000) : undefined);
    out.push({
      what: `Import one ${il.tier} file`,
      layerfs: mbs(mb(il)),
      peer: `git ${mbs(mb(g))}`,
      ratio: `${fmtX(ratio(il.ms, g?.ms))} git (time)`,
      source: 'import_large',
    });
  }
}

// Store footprint.
function footprint({ of, largest, at, x, ratio }: Lookups, out: Line[]): void {
  const fp = largest(of('store_footprint', 'layerfs'));
  if (fp) {
    const g = at(of('store_footprint', 'git'), fp.tier);
    out.push({
      what: `Store footprint, ${fp.tier} unique files`,
      layerfs: `${fmtBytes(fp.storeBytes)} (canonical ${fmtBytes(x(fp, 'uniqueBytes'))})`,
      peer: `git gc'd ${fmtBytes(x(g, 'packedBytes'))}`,
      ratio: `Store / canonical ${fmtX(ratio(fp.storeBytes, x(fp, 'uniqueBytes')))}; Store / git gc'd ${fmtX(ratio(fp.storeBytes, x(g, 'packedBytes')))}`,
      source: 'store_footprint',
    });
  }
}

// A 4 KiB edit in the largest file: the change, not the file.
function edits({ of, largest, at, x, ratio }: Lookups, out: Line[]): void {
  for (const [family, op, label] of [
    ['edit_length_preserving', 'overwrite-middle', '4 KiB overwrite'],
    ['edit_length_changing', 'insert', '4 KiB insert'],
  ] as const) {
    const e = largest(of(family, 'layerfs', op));
    if (!e) continue;
    const g = at(of(family, 'git', op), e.tier);
    out.push({
      what: `${label} in the middle of a ${e.tier} file, then commit`,
      layerfs: `${fmtMs(e.ms)}; +${fmtBytes(x(e, 'semanticGrowth'))} semantic`,
      peer: `git ${fmtMs(g?.ms)}; +${fmtBytes(x(g, 'fileGrowth'))} .git`,
      ratio: `${fmtX(ratio(e.ms, g?.ms))} time; ${fmtX(ratio(x(e, 'semanticGrowth'), x(g, 'fileGrowth')))} bytes`,
      source: family,
    });
  }
}

// CDC locality: an insert variant.
function cdcLocality({ of, largest, at, x, ratio }: Lookups, out: Line[]): void {
  const cdc = largest(of('dedup_cdc_locality', 'layerfs', 'insert-4KiB'));
  if (cdc) {
    const g = at(of('dedup_cdc_locality', 'git', 'insert-4KiB'), cdc.tier);
    out.push({
      what: `${cdc.tier} variants of a 1 MiB file, 4 KiB inserted in each: new bytes per variant`,
      layerfs: fmtBytes(x(cdc, 'semanticPerItem')),
      peer: `git loose ${fmtBytes(x(g, 'loosePerItem'))}; git gc'd ${fmtBytes(x(g, 'packedPerItem'))}`,
      ratio: `${fmtX(ratio(x(cdc, 'semanticPerItem'), x(g, 'loosePerItem')))} loose; ${fmtX(ratio(x(cdc, 'semanticPerItem'), x(g, 'packedPerItem')))} gc'd`,
      source: 'dedup_cdc_locality',
    });
  }
}

// Payload read throughput.
function payloadRead({ of, largest, at, x, ratio }: Lookups, out: Line[]): void {
  const pl = largest(of('payload_create_read', 'layerfs'));
  if (pl) {
    const g = at(of('payload_create_read', 'git'), pl.tier);
    out.push({
      what: `Read back a ${pl.tier} file (stream)`,
      layerfs: mbs(x(pl, 'readMBps')),
      peer: `git cat-file ${mbs(x(g, 'readMBps'))}`,
      ratio: `${fmtX(ratio(x(pl, 'readMs'), x(g, 'readMs')))} git (time)`,
      source: 'payload_create_read',
    });
  }
}

// Branch development on the largest tree.
function branchDevelopment({ of, largest, at, x, ratio }: Lookups, out: Line[]): void {
  const bd = largest(of('branch_development', 'layerfs'));
  if (bd) {
    const g = at(of('branch_development', 'git'), bd.tier);
    out.push({
      what: `30 commits (trunk + 2 forks) on ${bd.tier} files, then Add`,
      layerfs: `${fmtMs(bd.ms)}; median ${fmtMs(x(bd, 'medianCommitMs'))}`,
      peer: `git ${fmtMs(g?.ms)}; median ${fmtMs(x(g, 'medianCommitMs'))}`,
      ratio: `${fmtX(ratio(bd.ms, g?.ms))} git`,
      source: 'branch_development',
    });
  }
}

// Concurrent Workspaces.
function concurrentWorkspaces({ of, largest, at, x, ratio }: Lookups, out: Line[]): void {
  const mw = largest(of('multi_workspace_development', 'layerfs'));
  if (mw) {
    const g = at(of('multi_workspace_development', 'git'), mw.tier);
    out.push({
      what: `${mw.tier} Workspaces committing concurrently (separate processes)`,
      layerfs: `${(x(mw, 'commitsPerS') ?? NaN).toFixed(1)} commits/s`,
      peer: `git ${(x(g, 'commitsPerS') ?? NaN).toFixed(1)} commits/s`,
      ratio: `${fmtX(ratio(mw.ms, g?.ms))} git (wall)`,
      source: 'multi_workspace_development',
    });
  }
}

// Many agents committing to one Branch, each through its own Workspace (the own-files case).
function sharedBranch({ of, largest, x, ratio }: Lookups, out: Line[]): void {
  const own = (tool: string) => of('shared_branch', tool).filter((r) => r.extra.case === 'own files');
  const sb = largest(own('layerfs'));
  if (sb) {
    const g = own('git').find((r) => r.tier === sb.tier);
    out.push({
      what: `${sb.tierValue} processes × ${Math.round((x(sb, 'commits') ?? 0) / sb.tierValue)} commits on one Branch, own files`,
      layerfs: `${fmtMs(sb.ms)}; ${x(sb, 'commits') ?? '—'} Commits landed, ${x(sb, 'headMoved') ?? '—'} HeadMoved`,
      peer: `git clones, pull --rebase + push, ${fmtMs(g?.ms)}`,
      ratio: `${fmtX(ratio(sb.ms, g?.ms))} git`,
      source: 'shared_branch',
    });
  }
}

// Two releases of a real dependency tree: import A, then the upgrade to B committed from a
// Workspace of each projection, against git in the same run.
function realTree({ of, x, ratio }: Lookups, out: Line[]): void {
  const git = of('real_tree_releases', 'git')[0];
  const mat = of('real_tree_releases', 'layerfs-materialize')[0];
  const fuse = of('real_tree_releases', 'layerfs-fuse')[0];
  if (!git || !mat) return;
  out.push({
    what: `Import a real dependency tree (release A, ${(mat.files ?? 0).toLocaleString('en-US')} files)`,
    layerfs: fmtMs(x(mat, 'importMs')),
    peer: `git ${fmtMs(x(git, 'importMs'))}; tar read ${fmtMs(x(git, 'tarMs'))}`,
    ratio: `${fmtX(ratio(x(mat, 'importMs'), x(git, 'importMs')))} git`,
    source: 'real_tree_releases',
  });
  const commits = [mat, fuse].filter((r): r is Row => r !== undefined);
  out.push({
    what: `Commit its upgrade to release B (${(x(mat, 'changedPaths') ?? 0).toLocaleString('en-US')} changed paths) from a Workspace: ${commits.map((r) => String(r.extra.projection ?? r.tool)).join(' / ')}`,
    layerfs: commits.map((r) => fmtMs(x(r, 'commitMs'))).join(' / '),
    peer: `git add -A && git commit ${fmtMs(x(git, 'commitMs'))}`,
    ratio: `${commits.map((r) => fmtX(ratio(x(r, 'commitMs'), x(git, 'commitMs')))).join(' / ')} git`,
    source: 'real_tree_releases',
  });
}

// In the order the table shows them.
const FIGURES = [realTree, importTree, workspaceCommit, sharedBranch, fork, importLarge, footprint, edits, cdcLocality, payloadRead, branchDevelopment, concurrentWorkspaces];

export function headlineRows(results: Results): Line[] {
  const l = lookups(results);
  const out: Line[] = [];
  for (const figure of FIGURES) figure(l, out);
  return out;
}

export function headlineMarkdown(results: Results): string {
  const lines = headlineRows(results);
  if (lines.length === 0) return '';
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  return [
    '| measure | layerfs | peer | layerfs / peer | family |',
    '| :--- | ---: | ---: | ---: | :--- |',
    ...lines.map((l) => `| ${esc(l.what)} | ${esc(l.layerfs)} | ${esc(l.peer)} | ${esc(l.ratio)} | \`${l.source}\` |`),
  ].join('\n');
}
