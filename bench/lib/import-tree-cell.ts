// Cell: layerfs importing a fixture directory (a tree of small files, or one large file for
// import_large) as the genesis Layer of a new Store (the peer of git-init). Reports this process's peak RSS, which includes Node + tsx (~50–60 MiB; see
// baselineRssMiB, taken before the import).
//   node --import tsx bench/cells/init_namespace.ts --cell layerfs-init --dir FIXTURE --tmp SCRATCH --tier 1000

import path from 'node:path';
import { duAllocatedBytes, duBytes, round1, selfMaxRssMiB, shq, timeExternal } from './cell.js';
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Client, type InitReceipt } from '../../lib/sdk/index.js';
import { spawnSync } from 'node:child_process';
import { gitEnv } from './git.js';
import { type CellResult, cellSpec, type Given } from './define-cell.js';

/** git-init's --gc (store_footprint: `git gc` after the commit); the other cells ignore it. */
const IMPORT_OPTIONS = {
  gc: { type: 'boolean', default: false },
} as const;

interface ImportMeasure {
  /** Wall time of Client.create + initLayerStack. */
  ms: number;
  /** Wall time of client.close() (may checkpoint the WAL), reported apart. */
  closeMs: number;
  /** Store file + its -wal after close. */
  storeBytes: number;
  /** Disk blocks allocated to Store + WAL. */
  allocatedBytes: number;
  files?: number;
  bytes?: number;
  objects?: number;
  objectsReused?: number;
  receiptMs?: number;
  /** Other receipt figures worth keeping in the results JSON (phases, byte counts, outcome). */
  receipt: Record<string, unknown>;
}

const KEEP = ['outcome', 'phases', 'bytesInserted', 'bytesReused', 'semanticGrowth', 'allocatedGrowth', 'directories'];

function num(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}

function fileSize(p: string, allocated = false): number {
  try {
    const st = fs.statSync(p);
    return allocated ? st.blocks * 512 : st.size;
  } catch {
    return 0;
  }
}

/** Creates a new Store at `<tmp>/bench.layerfs` and imports `source` into LayerStack "bench". */
async function measureInit(source: string, tmp: string): Promise<ImportMeasure> {
  const storePath = path.join(tmp, 'bench.layerfs');
  const t0 = performance.now();
  const client = Client.create(storePath);
  let result: InitReceipt;
  try {
    result = await client.initLayerStack({ name: 'bench', source });
  } catch (err) {
    await client.close();
    throw err;
  }
  const ms = performance.now() - t0;
  const t1 = performance.now();
  await client.close();
  const closeMs = performance.now() - t1;
  const receipt = result as unknown as Record<string, unknown>;
  return {
    ms,
    closeMs,
    storeBytes: fileSize(storePath) + fileSize(`${storePath}-wal`),
    allocatedBytes: fileSize(storePath, true) + fileSize(`${storePath}-wal`, true),
    files: num(receipt.files),
    bytes: num(receipt.bytes),
    objects: num(receipt.objectsInserted),
    objectsReused: num(receipt.objectsReused),
    receiptMs: num(receipt.ms),
    receipt: Object.fromEntries(KEEP.filter((k) => receipt[k] !== undefined).map((k) => [k, receipt[k]])),
  };
}

async function layerfsInit(a: Given<typeof IMPORT_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  const baselineRssMiB = round1(selfMaxRssMiB());
  const m = await measureInit(path.resolve(a.dir), path.resolve(a.tmp));
  return {
    ms: round1(m.ms),
    closeMs: round1(m.closeMs),
    storeBytes: m.storeBytes,
    allocatedBytes: m.allocatedBytes,
    objects: m.objects,
    objectsReused: m.objectsReused,
    receiptFiles: m.files,
    receiptBytes: m.bytes,
    receiptMs: m.receiptMs,
    mbPerS: m.bytes !== undefined ? round1(m.bytes / 1e6 / (m.ms / 1000)) : undefined,
    baselineRssMiB,
    ...m.receipt,
  };
}

// Cell: the git peer for importing a tree — `git init && git add -A && git commit`.
// GIT_DIR points into the cell's scratch directory and GIT_WORK_TREE at the fixture, so git never
// writes inside the (shared, cached) fixture. Global/system config is ignored and automatic gc is
// off: a detached background `gc --auto` after the commit would otherwise pack 100k loose objects
// while we measure, and make .git's size a race.
//   node --import tsx bench/cells/init_namespace.ts --cell git-init --dir FIXTURE --tmp SCRATCH --tier 1000 [--gc]
async function gitInit(a: Given<typeof IMPORT_OPTIONS, 'dir' | 'tmp'>): Promise<CellResult> {
  // Absolute paths: git resolves a relative GIT_WORK_TREE against its cwd, which is the tree.
  const dir = path.resolve(a.dir);
  const gitDir = path.resolve(a.tmp, 'repo.git');
  const env = gitEnv(gitDir, dir);
  const git = 'git -c gc.auto=0 -c maintenance.auto=false';
  const run = timeExternal(['sh', '-c', `${git} init -q && ${git} add -A && ${git} commit -q -m x`], {
    env,
    cwd: dir,
  });
  const gitBytes = duBytes(gitDir);
  const count = spawnSync('git', ['count-objects', '-v'], { env, encoding: 'utf8' });
  const objects = Number(/^count: (\d+)$/m.exec(count.stdout)?.[1] ?? NaN);
  const out: Record<string, unknown> = {
    ms: round1(run.ms),
    maxRssMiB: round1(run.maxRssMiB),
    storeBytes: gitBytes,
    allocatedBytes: duAllocatedBytes(gitDir),
    objects,
  };
  if (a.gc) {
    const gc = timeExternal(['sh', '-c', `${git} gc -q`], { env, cwd: dir });
    out.gcMs = round1(gc.ms);
    out.gcMaxRssMiB = round1(gc.maxRssMiB);
    out.packedBytes = duBytes(gitDir);
  }
  return { ...out };
}

// Cell: the read floor — `tar cf - DIR | cat > /dev/null`. The pipe matters: GNU tar notices an
// archive written straight to /dev/null and then skips reading file contents.
//   node --import tsx bench/cells/init_namespace.ts --cell tar-read --dir FIXTURE --tier 1000
async function tarRead(a: Given<typeof IMPORT_OPTIONS, 'dir'>): Promise<CellResult> {
  const run = timeExternal(['sh', '-c', `tar cf - -C ${shq(a.dir)} . | cat > /dev/null`]);
  return { ms: round1(run.ms), maxRssMiB: round1(run.maxRssMiB) };
}

/** `git init && git add -A && git commit` of the fixture (store_footprint runs it with --gc). */
export const GIT_INIT = cellSpec({ id: 'git-init', tool: 'git', args: IMPORT_OPTIONS, required: ['dir', 'tmp'], run: gitInit });

/** Import a directory as a genesis Layer, against git and the tar read floor. */
export const IMPORT_TREE = cellSpec({
  id: 'layerfs-init',
  tool: 'layerfs',
  args: IMPORT_OPTIONS,
  required: ['dir', 'tmp'],
  run: layerfsInit,
  peers: [GIT_INIT, { id: 'tar-read', tool: 'tar', run: tarRead }],
});

