// Cell: --workers processes each make --commits commits to ONE Branch through their own
// materialized Workspace (reconciling commits), --share of them editing a line of a shared file
// (disjoint lines, or all the same line with --overlap). Checks: every commit is in the history,
// the head holds each worker's last own files, every shared edit a commit reported as landed is
// in that Commit, and without --overlap the final shared file holds every worker's last edit of
// each of its lines.
//   node --import tsx bench/cells/layerfs-shared-branch.ts --tmp SCRATCH --tier 8 --workers 8 --commits 50
import path from 'node:path';
import { cellArgs, requireArgs } from '../lib/args.js';
import { emit, fail } from '../lib/cell.js';
import { Client } from '../../lib/sdk/index.js';
import { runSharedWorkers, SHARED_OPTIONS, summarize, writeStart } from './_shared-branch.js';

const CELL = 'layerfs-shared-branch';
const a = cellArgs(SHARED_OPTIONS);
const tier = a.tier!;

try {
  requireArgs(a, ['tmp']);
  const tmp = path.resolve(a.tmp);
  const n = Number(a.workers);
  const commits = Number(a.commits);
  const src = path.join(tmp, 'start');
  writeStart(src, n);
  const store = path.join(tmp, 'bench.layerfs');
  let c = Client.create(store);
  const layer = (await c.initLayerStack({ name: 'bench', source: src })).layer.id;
  c.forkBranch({ name: 'shared', layer });
  const wss: { id: string; path: string }[] = [];
  for (let i = 0; i < n; i++) wss.push(await c.createWorkspace('shared', { at: path.join(tmp, `ws${i}`), projection: 'materialize' }));
  c.close();
  const { wallMs, results } = await runSharedWorkers(
    (i) => ['--tool', 'layerfs', '--store', store, '--ws', wss[i]!.id, '--path', wss[i]!.path, '--commits', String(commits), '--share', a.share!, ...(a.overlap ? ['--overlap'] : [])],
    n,
  );
  c = Client.connect(store);
  const checks: Record<string, string> = {};
  const log = c.log('shared');
  const created = results.reduce((s, r) => s + r.created, 0);
  checks.history = log.length === created && created === n * commits ? 'ok' : `FAILED: ${log.length} Commits in history, ${created} created, ${n * commits} made`;
  const errors = results.flatMap((r) => r.errors);
  checks.errors = errors.length === 0 ? 'ok' : `FAILED: ${errors[0]}`;
  let lost = 0;
  for (const r of results) for (const s of r.shared) if (c.cat(`${s.commit}`, 'shared.txt').toString().split('\n')[s.line] !== s.text) lost++;
  checks.sharedInTheirCommits = lost === 0 ? 'ok' : `FAILED: ${lost} shared edits not in the Commit that reported them`;
  if (!a.overlap) {
    const final = c.cat('shared', 'shared.txt').toString().split('\n');
    const last = new Map<number, string>();
    for (const r of results) for (const s of r.shared) last.set(s.line, s.text);
    const missing = [...last].filter(([line, text]) => final[line] !== text).length;
    checks.finalSharedFile = missing === 0 ? 'ok' : `FAILED: ${missing} lines miss their last edit`;
  }
  let ownMissing = 0;
  for (let w = 0; w < n; w++) for (let k = 0; k < Math.min(10, commits); k++) {
    const i = commits - 1 - ((commits - 1 - k) % 10);
    if (c.cat('shared', `own/w${w}-${k}.txt`).toString() !== `worker ${w} commit ${i}\n`) ownMissing++;
  }
  checks.ownFiles = ownMissing === 0 ? 'ok' : `FAILED: ${ownMissing} own files without their last content`;
  const v = c.verify();
  checks.verify = v.ok ? 'ok' : 'FAILED';
  c.close();
  emit({ cell: CELL, tier, ...summarize(wallMs, results), lost, checks });
} catch (err) {
  fail(CELL, tier, err);
}
