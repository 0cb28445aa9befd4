// Cell: --workers processes each make --commits commits to ONE Branch through their own
// materialized Workspace (reconciling commits), --share of them editing a line of a shared file
// (disjoint lines, or all the same line with --overlap). Checks: every commit is in the history,
// the head holds each worker's last own files, every shared edit a commit reported as landed is
// in that Commit, and without --overlap the final shared file holds every worker's last edit of
// each of its lines.
//   node --import tsx bench/cells/shared_branch.ts --cell layerfs-shared-branch --tmp SCRATCH --tier 8 --workers 8 --commits 50

import path from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { runSharedWorkers, SHARED_OPTIONS, summarize, writeStart } from '../lib/shared-branch.js';
import { spawnSync } from 'node:child_process';
import { gitEnvPlain } from '../lib/git.js';
import { writeFileSync } from 'node:fs';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';

async function layerfsSharedBranch(a: Given<typeof SHARED_OPTIONS, 'tmp'>): Promise<CellResult> {
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
  return { ...summarize(wallMs, results), lost, checks };
}

// Cell: the git peer of layerfs-shared-branch: one bare repository, --workers clones, each
// commit is `git add -A && git commit` then `git push`, and on rejection `git pull --rebase`
// (an overlapping shared line resolved to upstream's) and push again, until it lands.
function git(cwd: string, ...args: string[]): string {
  const r = spawnSync('git', ['-c', 'gc.auto=0', ...args], { cwd, env: gitEnvPlain(), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function gitSharedBranch(a: Given<typeof SHARED_OPTIONS, 'tmp'>): Promise<CellResult> {
  const tmp = path.resolve(a.tmp);
  const n = Number(a.workers);
  const commits = Number(a.commits);
  const src = path.join(tmp, 'start');
  writeStart(src, n);
  git(src, 'init', '-q', '-b', 'main');
  git(src, 'add', '-A');
  git(src, 'commit', '-q', '-m', 'init');
  git(tmp, 'clone', '-q', '--bare', src, 'bare.git');
  const clones: string[] = [];
  for (let i = 0; i < n; i++) {
    git(tmp, 'clone', '-q', 'bare.git', `ws${i}`);
    clones.push(path.join(tmp, `ws${i}`));
  }
  const { wallMs, results } = await runSharedWorkers(
    (i) => ['--tool', 'git', '--path', clones[i]!, '--commits', String(commits), '--share', a.share!, ...(a.overlap ? ['--overlap'] : [])],
    n,
  );
  const count = Number(git(path.join(tmp, 'bare.git'), 'rev-list', '--count', 'main').trim()) - 1;
  const checks: Record<string, string> = { history: count === n * commits ? 'ok' : `FAILED: ${count} commits in main, ${n * commits} made` };
  return { ...summarize(wallMs, results), checks };
}

// Cell: what a reconciling commit costs against a plain one, on the --dir tree fixture. Setup
// (untimed): import, fork one Branch, two materialized Workspaces A and B of it. Then --rounds
// rounds: B makes 10 Commits of 10 new files each (the head moves 10 Commits ahead of A's base);
// A writes 10 files and commits (reconciling: timed); A writes 10 more and commits again (the
// head did not move: a plain commit of the same change, timed). Reports the medians and their
// ratio, and checks every file of both sides is in the head.
//   node --import tsx bench/cells/shared_branch.ts --cell layerfs-reconcile-cost --dir FIXTURE --tmp SCRATCH --tier 100000 --rounds 3
const RECONCILE_OPTIONS = { rounds: { type: 'string', default: '3' } } as const;
const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)]!;

async function reconcileCostMeasure(a: Given<typeof RECONCILE_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const tmp = path.resolve(a.tmp);
  const store = path.join(tmp, 'bench.layerfs');
  const c = Client.create(store);
  const layer = (await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) })).layer.id;
  c.forkBranch({ name: 'b', layer });
  const wa = await c.createWorkspace('b', { at: path.join(tmp, 'a'), projection: 'materialize' });
  const wb = await c.createWorkspace('b', { at: path.join(tmp, 'b'), projection: 'materialize' });
  const reconciling: number[] = [];
  const reconcileMs: number[] = [];
  const plain: number[] = [];
  let ok = true;
  for (let round = 0; round < Number(a.rounds); round++) {
    for (let k = 0; k < 10; k++) {
      for (let f = 0; f < 10; f++) writeFileSync(path.join(wb.path, `head-${round}-${k}-${f}.txt`), `head ${round} ${k} ${f}\n`);
      const r = await c.commitWorkspace(wb.id);
      ok &&= r.outcome === 'Created';
    }
    for (let f = 0; f < 10; f++) writeFileSync(path.join(wa.path, `ws-${round}-r-${f}.txt`), `ws ${round} ${f}\n`);
    const r1 = await c.commitWorkspace(wa.id);
    ok &&= r1.outcome === 'Created' && r1.reconciled !== undefined;
    reconciling.push(r1.ms);
    if (r1.outcome === 'Created' && r1.reconciled) reconcileMs.push(r1.reconciled.ms);
    for (let f = 0; f < 10; f++) writeFileSync(path.join(wa.path, `ws-${round}-p-${f}.txt`), `ws ${round} ${f}\n`);
    const r2 = await c.commitWorkspace(wa.id);
    ok &&= r2.outcome === 'Created' && r2.reconciled === undefined;
    plain.push(r2.ms);
  }
  const last = Number(a.rounds) - 1;
  const checks = {
    outcomes: ok ? 'ok' : 'FAILED: a commit was not Created (or not reconciled as expected)',
    content: c.cat('b', `head-${last}-9-9.txt`).toString() === `head ${last} 9 9\n` && c.cat('b', `ws-${last}-p-9.txt`).toString() === `ws ${last} 9\n` ? 'ok' : 'FAILED: a file is missing from the head',
    verify: c.verify().ok ? 'ok' : 'FAILED',
  };
  c.close();
  const rm = median(reconciling);
  const pm = median(plain);
  return { ms: Math.round(rm * 10) / 10, reconcilingMs: Math.round(rm * 10) / 10, plainMs: Math.round(pm * 10) / 10, reconcileMs: Math.round(median(reconcileMs) * 10) / 10, ratio: Math.round((rm / pm) * 100) / 100, rounds: Number(a.rounds), checks };
}

export const sharedBranch = defineCell({
  file: import.meta.url,
  id: 'layerfs-shared-branch',
  tool: 'layerfs',
  args: SHARED_OPTIONS,
  required: ['tmp'],
  run: layerfsSharedBranch,
  peers: [{ id: 'git-shared-branch', tool: 'git', run: gitSharedBranch }],
});

export const reconcileCost = defineCell({
  file: import.meta.url,
  id: 'layerfs-reconcile-cost',
  tool: 'layerfs',
  required: ['dir', 'tmp'],
  args: RECONCILE_OPTIONS,
  run: reconcileCostMeasure,
});

runIfMain(import.meta.url, sharedBranch, reconcileCost);
