// Cell: what an edit history costs in a Store. Import the tree (Client.create + initLayerStack),
// fork a Branch, materialize a Workspace, then ROUNDS rounds of small edits to 1% of the files
// (fixtures/edit-history.ts), each committed with commitWorkspace. Reports the Store file + WAL
// after the final close (storeBytes), the same right after the import (importBytes), commit
// times, and checks the Branch head against the Workspace at the end. Then `repack` on a fresh
// connection (repackMs) and the Store file + WAL after it (repackedBytes).
//   node --import tsx bench/cells/store_edit_history.ts --cell layerfs-edit-history --dir FIXTURE --tmp SCRATCH --tier 10000 [--rounds 100]

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { repackStore, storeFiles } from '../lib/measure.js';
import { applyRound, listFiles, ROUNDS } from '../fixtures/edit-history.js';
import { execFileSync } from 'node:child_process';
import { duBytes } from '../lib/cell.js';
import { gitEnv } from '../lib/git.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';
import { Client } from '../../lib/sdk/index.js';

const EDIT_HISTORY_OPTIONS = { rounds: { type: 'string' } } as const;

async function layerfsEditHistory(a: Given<typeof EDIT_HISTORY_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const rounds = Number(a.rounds ?? ROUNDS);
  const tmp = path.resolve(a.tmp);
  const storePath = path.join(tmp, 'bench.layerfs');
  const wsDir = path.join(tmp, 'ws');
  let t = performance.now();
  let c = Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
  const importMs = performance.now() - t;
  await c.close();
  const importBytes = storeFiles(storePath).bytes;
  c = Client.connect(storePath);
  const branch = c.forkBranch({ name: 'work', layer: init.layer.id });
  const ws = await c.createWorkspace(branch.name, { at: wsDir });
  const files = listFiles(wsDir);
  let commitMs = 0;
  let editBytes = 0;
  let semantic = 0;
  for (let r = 1; r <= rounds; r++) {
    editBytes += applyRound(wsDir, files, r).editBytes;
    t = performance.now();
    const receipt = await c.commitWorkspace(ws.id);
    commitMs += performance.now() - t;
    if (receipt.outcome !== 'Created') throw new Error(`round ${r}: commitWorkspace outcome ${receipt.outcome}`);
    semantic += receipt.bytesInserted ?? 0;
  }
  // The head must hold what the Workspace holds (a sample of every 50th file).
  for (let i = 0; i < files.length; i += 50) {
    const want = fs.readFileSync(path.join(wsDir, files[i]!));
    if (!want.equals(c.cat(branch.name, files[i]!))) throw new Error(`${files[i]} differs between the Branch head and the Workspace`);
  }
  const info = c.info();
  await c.close();
  const end = storeFiles(storePath);
  // Then the offline repack, git gc --aggressive's counterpart (the git cell runs that one).
  const repacked = await repackStore(storePath);
  return {
    ms: Math.round(commitMs),
    importMs: Math.round(importMs),
    files: files.length,
    rounds,
    editBytes,
    semanticGrowth: semantic,
    importBytes,
    storeBytes: end.bytes,
    historyBytes: end.bytes - importBytes,
    objects: info.objects,
    ...repacked,
  };
}

// Cell: the git peer of layerfs-edit-history. Copy the tree into a scratch work tree, `git init`,
// add and commit it, then the same ROUNDS rounds of edits (fixtures/edit-history.ts), each
// committed with `git commit -a`. Then `git gc --aggressive`. Reports .git bytes after the
// import commit gc'd the same way (importBytes) and after the history (storeBytes).
//   node --import tsx bench/cells/store_edit_history.ts --cell git-edit-history --dir FIXTURE --tmp SCRATCH --tier 10000 [--rounds 100]

async function gitEditHistory(a: Given<typeof EDIT_HISTORY_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const rounds = Number(a.rounds ?? ROUNDS);
  const tmp = path.resolve(a.tmp);
  const work = path.join(tmp, 'work');
  execFileSync('cp', ['-a', path.resolve(a.dir), work]);
  const env = gitEnv(path.join(work, '.git'), work);
  const git = (...args: string[]) => execFileSync('git', ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false', ...args], { env, cwd: work, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 26 });
  // The file list first: .git must not be part of it.
  const files = listFiles(work);
  let t = performance.now();
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '-m', 'import');
  const importMs = performance.now() - t;
  let commitMs = 0;
  let editBytes = 0;
  for (let r = 1; r <= rounds; r++) {
    editBytes += applyRound(work, files, r).editBytes;
    t = performance.now();
    git('commit', '-q', '-a', '-m', `round ${r}`);
    commitMs += performance.now() - t;
  }
  const looseBytes = duBytes(path.join(work, '.git'));
  t = performance.now();
  git('gc', '-q', '--aggressive');
  const gcMs = performance.now() - t;
  return {
    ms: Math.round(commitMs),
    importMs: Math.round(importMs),
    gcMs: Math.round(gcMs),
    files: files.length,
    rounds,
    editBytes,
    looseBytes,
    storeBytes: duBytes(path.join(work, '.git')),
  };
}

export const editHistory = defineCell({
  file: import.meta.url,
  id: 'layerfs-edit-history',
  tool: 'layerfs',
  required: ['dir', 'tmp'],
  args: EDIT_HISTORY_OPTIONS,
  run: layerfsEditHistory,
  peers: [{ id: 'git-edit-history', tool: 'git', run: gitEditHistory }],
});

runIfMain(import.meta.url, editHistory);
