// Cell: 4 KiB edits of one large file in a materialized Workspace, each committed. Steps:
//   init        Client.create + initLayerStack(FIXTURE, one file large.bin)      → initMs
//   materialize forkBranch + createWorkspace(branch, { at: SCRATCH/ws })          → materializeMs
//   warm        close + reconnect (checkpoints the WAL), one no-op commitWorkspace → noopMs
//   per op      applyFileOp (in place, untimed; see _campaign.ts), commitWorkspace → case ms
// The ops run one after another in the same Workspace, in the order given by --ops; before each op
// but the first, the file is restored to the fixture's bytes and that restore is committed
// (untimed, restoreCommitMs), so every op edits the same original file. Per op: the receipt's bytesInserted (semantic),
// allocatedGrowth (pages), objects inserted / reused. After each commit the Branch's file is
// streamed back and compared with the Workspace file (untimed).
//   node --import tsx bench/cells/layerfs-file-edits.ts --dir FIXTURE --tmp SCRATCH --tier "10 MiB" \
//     --ops overwrite-head,overwrite-middle,overwrite-tail

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cellArgs, requireArgs } from '../lib/args.js';
import { emit, fail, selfMaxRssMiB } from '../lib/cell.js';
import { EDIT_MTIME } from '../fixtures/edits.js';
import { ALL_OPS, applyFileOp, compareStored, EDIT_BYTES, loadCampaignSdk, r1, restoreFile, semanticOf, storeFiles, type FileOp } from './_campaign.js';

const CELL = 'layerfs-file-edits';
const FILE = 'large.bin';
const a = cellArgs({ ops: { type: 'string', default: ALL_OPS.join(',') }, seed: { type: 'string', default: '1' } });
const tier = a.tier!;

try {
  requireArgs(a, ['dir', 'tmp']);
  const ops = a.ops!.split(',').map((s) => s.trim()) as FileOp[];
  const bad = ops.filter((o) => !ALL_OPS.includes(o));
  if (bad.length > 0) throw new Error(`unknown ops: ${bad.join(', ')} (known: ${ALL_OPS.join(', ')})`);
  const tmp = path.resolve(a.tmp);
  const storePath = path.join(tmp, 'bench.layerfs');
  const wsDir = path.join(tmp, 'ws');
  const wsFile = path.join(wsDir, FILE);
  const sdk = await loadCampaignSdk();

  let t = performance.now();
  let c = sdk.Client.create(storePath);
  const init = await c.initLayerStack({ name: 'bench', source: path.resolve(a.dir) });
  const initMs = performance.now() - t;
  const branch = c.forkBranch({ name: 'work', layer: init.layer.id });
  t = performance.now();
  const ws = await c.createWorkspace(branch.name, { at: wsDir });
  const materializeMs = performance.now() - t;
  const rssBeforeCommitsMiB = r1(selfMaxRssMiB());
  await c.close();
  const filesBefore = storeFiles(storePath);
  c = sdk.Client.connect(storePath);
  t = performance.now();
  const noop = await c.commitWorkspace(ws.id);
  const noopMs = performance.now() - t;
  if (noop.outcome !== 'UpToDate') throw new Error(`no-op commit: outcome ${noop.outcome}, expected UpToDate`);

  const cases: Record<string, unknown>[] = [];
  const original = path.join(path.resolve(a.dir), FILE);
  let restoreCommitMs = 0;
  for (let k = 0; k < ops.length; k++) {
    const op = ops[k]!;
    if (k > 0) {
      // Back to the original content (untimed commit), so that every op edits the same file.
      restoreFile(wsFile, original, EDIT_MTIME + 100 + k);
      t = performance.now();
      const back = await c.commitWorkspace(ws.id);
      restoreCommitMs += performance.now() - t;
      if (back.outcome !== 'Created') throw new Error(`restore before ${op}: outcome ${back.outcome}, expected Created`);
    }
    const edit = applyFileOp(wsFile, op, Number(a.seed), EDIT_MTIME + k + 1);
    t = performance.now();
    const r = await c.commitWorkspace(ws.id);
    const ms = performance.now() - t;
    if (r.outcome !== 'Created') throw new Error(`${op}: commitWorkspace outcome ${r.outcome}, expected Created (${JSON.stringify(r).slice(0, 300)})`);
    const diff = compareStored(c, branch.name, FILE, wsFile);
    if (diff !== null) throw new Error(`${op}: after commit, ${diff}`);
    cases.push({
      case: op,
      ms: r1(ms),
      receiptMs: typeof r.ms === 'number' ? r1(r.ms) : undefined,
      bytes: edit.sizeAfter,
      sizeBefore: edit.sizeBefore,
      offset: edit.offset,
      editBytes: EDIT_BYTES,
      semanticGrowth: semanticOf(r),
      allocatedGrowth: r.allocatedGrowth,
      objectsInserted: r.objectsInserted,
      objectsReused: r.objectsReused,
      changedPaths: r.changedPaths,
      phases: r.phases,
    });
  }
  const info = c.info();
  await c.close();
  const filesAfter = storeFiles(storePath);
  emit({
    cell: CELL,
    tier,
    ms: r1(cases.reduce((s, cs) => s + (cs.ms as number), 0)),
    initMs: r1(initMs),
    materializeMs: r1(materializeMs),
    noopMs: r1(noopMs),
    // Peak RSS after import + materialize; maxRssMiB (after the commits) minus this is the commits'.
    rssBeforeCommitsMiB,
    restoreCommitMs: r1(restoreCommitMs),
    initSemantic: semanticOf(init),
    objects: info.objects,
    storeBytes: filesAfter.bytes,
    fileGrowth: filesAfter.bytes - filesBefore.bytes,
    cases,
  });
} catch (err) {
  fail(CELL, tier, err);
}
