// The headline of docs/BENCHMARKS.md (bench/report/headline.ts) takes each figure from the rows
// of one run: the real tree's upgrade and many agents on one Branch against git in that run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { headlineRows } from '../../bench/report/headline.js';
import type { Results } from '../../bench/lib/results.js';
import type { Row } from '../../bench/lib/types.js';

function row(family: string, tool: string, ms: number, extra: Record<string, unknown>, over: Partial<Row> = {}): Row {
  return { family, tier: 'A→B', tierValue: 2, tierUnit: 'releases', tool, cell: `${tool}-cell`, status: 'ok', ms, extra, ...over };
}

function results(rows: Row[]): Results {
  const machine = {} as Results['machine'];
  return { version: 1, startedAt: '', finishedAt: '', quick: false, only: null, argv: [], machine, loadAvgAtStart: [], fixtures: [], rows };
}

test('headline: the real tree upgrade committed from both projections, each against git in the same run', () => {
  const lines = headlineRows(
    results([
      row('real_tree_releases', 'layerfs-materialize', 6_000, { importMs: 5_000, commitMs: 6_000, changedPaths: 91_127, projection: 'materialize' }, { files: 83_548 }),
      row('real_tree_releases', 'layerfs-fuse', 9_000, { importMs: 5_100, commitMs: 9_000, projection: 'fuse' }),
      row('real_tree_releases', 'git', 12_000, { importMs: 20_000, commitMs: 12_000, tarMs: 400 }),
    ]),
  );
  const [imp, commit] = lines;
  assert.equal(lines.length, 2);
  assert.match(imp!.what, /83,548 files/);
  assert.equal(imp!.ratio, '0.25× git');
  assert.match(commit!.what, /91,127 changed paths.*materialize \/ fuse/);
  assert.equal(commit!.ratio, '0.50× / 0.75× git');
});

test('headline: many agents on one Branch takes the own-files case, a failed cell leaves the figure out', () => {
  const sb = (tool: string, ms: number, kase: string, status: Row['status'] = 'ok'): Row =>
    row('shared_branch', tool, ms, { case: kase, commits: 400, headMoved: 0 }, { tier: '8 × 50', tierValue: 8, tierUnit: 'workers', status });
  const lines = headlineRows(results([sb('layerfs', 40_000, '10% shared, same line'), sb('layerfs', 8_000, 'own files'), sb('git', 400_000, 'own files')]));
  assert.equal(lines.length, 1);
  assert.equal(lines[0]!.what, '8 processes × 50 commits on one Branch, own files');
  assert.equal(lines[0]!.ratio, '0.02× git');
  assert.equal(headlineRows(results([sb('layerfs', 8_000, 'own files', 'error'), sb('git', 400_000, 'own files')])).length, 0);
});
