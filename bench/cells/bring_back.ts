// Cell: bringing work back. --op diff: two "releases" of the init fixture tree (the second with
// mixed edits to 5 % of the files, 1 % deleted, 1 % added, 0.5 % renamed) as a LayerStack Layer
// and a Commit, and as two git commits of the same trees; then `Client.diffPatch` (in process,
// text, binary summarised) against `git diff A B` (a child process, output to /dev/null), best
// of 3 each. --op backup: a Store holding the large-file fixture, closed; `cp` of the stopped
// file against `Client.backup` (SQLite backup API + verification of the copy), best of 2.
//   node --import tsx bench/cells/bring_back.ts --cell layerfs-bring-back --op diff --dir FIXTURE --files N --tmp SCRATCH --tier T
//   node --import tsx bench/cells/bring_back.ts --cell layerfs-bring-back --op backup --dir LARGE_FIXTURE --tmp SCRATCH --tier T

import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { Client } from '../../lib/sdk/index.js';
import { timeExternal } from '../lib/cell.js';
import { copyTree } from '../fixtures/copy.js';
import { applyEdits, editSet, treeParams } from '../fixtures/tree.js';
import { Rng } from '../../test/helpers/random.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';

const BRING_BACK_OPTIONS = {
  op: { type: 'string' },
  files: { type: 'string' },
} as const;

function best(n: number, f: () => number): number {
  let m = Infinity;
  for (let i = 0; i < n; i++) m = Math.min(m, f());
  return m;
}

/** The second release: edits, deletions, additions and renames, seeded. */
function release2(root: string, files: number): { changed: number } {
  const p = treeParams(files);
  const edits = editSet(p, { k: Math.max(1, Math.floor(files / 20)), seed: 2, mode: 'mixed' });
  applyEdits(root, edits);
  const rng = new Rng(3, 0xb41c);
  const all: string[] = [];
  const walk = (d: string) => {
    for (const n of fs.readdirSync(path.join(root, d)).sort()) {
      if (n === '.git') continue;
      const rel = d ? `${d}/${n}` : n;
      if (fs.statSync(path.join(root, rel)).isDirectory()) walk(rel);
      else all.push(rel);
    }
  };
  walk('');
  let changed = edits.length;
  for (let i = 0; i < Math.floor(files / 100); i++, changed++) fs.rmSync(path.join(root, all[rng.below(all.length)]!), { force: true });
  for (let i = 0; i < Math.floor(files / 200); i++, changed++) {
    const from = path.join(root, all[rng.below(all.length)]!);
    if (fs.existsSync(from)) fs.renameSync(from, `${from}.moved`);
  }
  for (let i = 0; i < Math.floor(files / 100); i++, changed++) fs.writeFileSync(path.join(root, `added-${i}.txt`), `new file ${i}\n`.repeat(1 + rng.below(200)));
  return { changed };
}

async function diffOp(dir: string, tmp: string, files: number): Promise<CellResult> {
  const work = path.join(tmp, 'r1');
  copyTree(dir, work);
  const store = path.join(tmp, 'bench.layerfs');
  const c = Client.create(store);
  const init = await c.initLayerStack({ name: 'rel', source: work });
  c.forkBranch({ name: 'next', layer: init.layer.id });
  const ws = await c.createWorkspace('next', { at: path.join(tmp, 'ws'), projection: 'materialize' });
  const git = (args: string[]) => execFileSync('git', ['-c', 'gc.auto=0', '-C', work, ...args], { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@b', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@b' } });
  git(['init', '-q']);
  git(['add', '-A']);
  git(['commit', '-qm', 'release 1']);
  const { changed } = release2(ws.path, files);
  release2(work, files);
  const commit = await c.commitWorkspace(ws.id, { message: 'release 2' });
  if (commit.outcome !== 'Created') throw new Error(`commit: ${commit.outcome}`);
  git(['add', '-A']);
  git(['commit', '-qm', 'release 2']);
  let patchBytes = 0;
  let patchFiles = 0;
  const layerfsMs = best(3, () => {
    const t = performance.now();
    const p = c.diffPatch(init.layer.id, 'next');
    const ms = performance.now() - t;
    patchBytes = p.patch.length;
    patchFiles = p.files.length;
    return ms;
  });
  const gitMs = best(3, () => timeExternal(['git', '-C', work, 'diff', '-M', 'HEAD~1', 'HEAD']).ms);
  const gitOut = spawnSync('git', ['-C', work, 'diff', '-M', 'HEAD~1', 'HEAD'], { maxBuffer: 1 << 30 });
  const gitFiles = (gitOut.stdout.toString('latin1').match(/^diff --git /gm) ?? []).length;
  c.close();
  return { op: 'diff', ms: layerfsMs, files, changed, layerfsMs, gitMs, patchBytes, patchFiles, gitPatchBytes: gitOut.stdout.length, gitFiles };
}

async function backupOp(dir: string, tmp: string): Promise<CellResult> {
  const store = path.join(tmp, 'bench.layerfs');
  const c0 = Client.create(store);
  await c0.initLayerStack({ name: 'big', source: dir });
  c0.close();
  const storeBytes = fs.statSync(store).size;
  let n = 0;
  const cpMs = best(2, () => {
    const dest = path.join(tmp, `cp${n++}.layerfs`);
    execFileSync('sync');
    const ms = timeExternal(['cp', store, dest]).ms;
    fs.rmSync(dest);
    return ms;
  });
  let copyMs = Infinity;
  let verifyMs = Infinity;
  let totalMs = Infinity;
  for (let i = 0; i < 2; i++) {
    const dest = path.join(tmp, `backup${i}.layerfs`);
    execFileSync('sync');
    const c = Client.connect(store);
    const t = performance.now();
    const r = await c.backup(dest);
    const ms = performance.now() - t;
    c.close();
    if (ms < totalMs) [totalMs, copyMs, verifyMs] = [ms, r.copyMs, r.verifyMs];
    fs.rmSync(dest);
  }
  return { op: 'backup', ms: totalMs, bytes: storeBytes, storeBytes, cpMs, copyMs, verifyMs, backupMs: totalMs };
}

async function bringBackMeasure(a: Given<typeof BRING_BACK_OPTIONS, 'op' | 'dir' | 'tmp'>): Promise<CellResult> {
  if (a.op === 'diff') return await diffOp(path.resolve(a.dir), path.resolve(a.tmp), Number(a.files));
  if (a.op === 'backup') return await backupOp(path.resolve(a.dir), path.resolve(a.tmp));
  throw new Error(`unknown --op ${a.op}`);
}

export const bringBack = defineCell({
  file: import.meta.url,
  id: 'layerfs-bring-back',
  tool: 'layerfs',
  args: BRING_BACK_OPTIONS,
  required: ['op', 'dir', 'tmp'],
  run: bringBackMeasure,
});

runIfMain(import.meta.url, bringBack);
