// Cell: a FUSE Workspace (projection 'fuse', served by the Store's daemon) against the same work
// on a plain directory, in the same run. One --op per run:
//   read    sequential `dd bs=1M` of a --mib MiB random file, page cache warm (best of 3 each);
//           also the first read through a fresh mount (every byte served by the daemon), the
//           same warm read of a plain copy held in 4 KiB folios (page-folios.ts: the bound where
//           the kernel gives FUSE no large folios) and the share of large folios on each side
//   stat    `find . -type f | xargs stat` over a --files tree (cold = first pass on a fresh
//           mount, warm = second)
//   commit  4 KiB overwrite (dd conv=notrunc, a child process) in the middle of a --mib MiB
//           file, then client.commitWorkspace (SDK wall time, as a caller sees it), --rounds
//           times; Store growth is the receipt's allocatedGrowth (the daemon's write transaction)
//   write   sequential `dd bs=1M` of a --mib MiB random file (page cache warm) into a new file,
//           close included, best of 3 each (the new file is removed between runs)
//   untar   `tar -xf` of a --files tree archive into a fresh directory (best of 3 each)
//   --ab F  the op (read, stat, write, untar) through two Stores, one mounted with kernel feature F
//           on and one with it off (each mount starts its daemon with its own
//           $LAYERFS_FUSE_FEATURES), alternating on/off for --ab-rounds rounds, a fresh mount each
//           time; each round has its own plain-directory run, so every ratio is same-minute
//   all     the four in turn on one Store, one daemon and one mount (the quick tier: a daemon
//           start costs seconds here); the result lists them as `cases`
// Every access into the mount is a child process (sh, dd, find, tar); this process only talks to
// the daemon through the SDK.
//   node --import tsx bench/cells/fuse_mount.ts --cell layerfs-fuse-mount --op read --tmp SCRATCH --tier quick [--mib 16] [--files 1000] [--rounds 5]

import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Client } from '../../lib/sdk/index.js';
import { randomFile } from './file-ops.js';
import { median, percentile } from './measure.js';
import { fuseAvailable } from '../../lib/fuse/index.js';
import { FEATURES_ENV } from '../../lib/fuse/kernel-features.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';
import { treeParams, writeTree } from '../fixtures/tree.js';
import { shq } from './cell.js';
import { foliosOf, order0Copy } from './page-folios.js';
import { type CellResult, cellSpec, type Given } from './define-cell.js';

const FUSE_OPTIONS = {
  op: { type: 'string' },
  mib: { type: 'string', default: '16' },
  files: { type: 'string', default: '1000' },
  rounds: { type: 'string', default: '5' },
  /** $LAYERFS_FUSE_FEATURES for the daemon this run starts (lib/fuse/kernel-features.ts). */
  features: { type: 'string' },
  /** A/B of one kernel feature: the op on a mount with it on and one with it off, alternated. */
  ab: { type: 'string' },
  'ab-rounds': { type: 'string', default: '3' },
  /** Runs of read, write and untar on each side, the best kept. */
  best: { type: 'string', default: '3' },
} as const;

/** This run's arguments: the sizes the helpers below read. */
let a: Given<typeof FUSE_OPTIONS, 'tmp'>;

/** Wall ms of a shell command (a child process: the only way this cell touches a mount). */
function sh(cmd: string, cwd?: string): number {
  const t0 = performance.now();
  const r = spawnSync('sh', ['-c', cmd], { cwd, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} exited ${r.status}: ${r.stderr.slice(-1000)}`);
  return performance.now() - t0;
}

const tries = () => Math.max(1, Number(a.best));
const best = (n: number, f: () => number) => Math.min(...Array.from({ length: n }, f));


interface Setup {
  client: Client;
  src: string;
  importMs: number;
  mount(): Promise<{ path: string; id: string; end(): Promise<void> }>;
  done(): Promise<void>;
}

async function setup(tmp: string, fill: (src: string) => void): Promise<Setup> {
  const src = path.join(tmp, 'src');
  fs.mkdirSync(src, { recursive: true });
  fill(src);
  const storePath = path.join(tmp, 'store.sqlite');
  const importer = Client.create(storePath);
  const t0 = performance.now();
  const init = await importer.initLayerStack({ name: 'm', source: src });
  const importMs = performance.now() - t0;
  importer.forkBranch({ name: 'main', layer: init.layer.id });
  // Closed and opened again, as after `layerfs layerstack init`: the import's WAL is copied into
  // the Store file now, not by a checkpoint running beside the measured operations.
  importer.close();
  const client = Client.connect(storePath);
  let n = 0;
  return {
    client,
    src,
    importMs,
    async mount(): Promise<{ path: string; id: string; end(): Promise<void> }> {
      const at = path.join(tmp, `ws${n++}`);
      const ws = await client.createWorkspace('main', { at, projection: 'fuse' });
      return { path: at, id: ws.id, end: async () => void (await client.endWorkspace(ws.id, { discard: true })) };
    },
    async done() {
      await client.stopDaemon({ discard: true }).catch(() => {});
      client.close();
    },
  };
}

type Mount = Awaited<ReturnType<Setup['mount']>>;

/** What each op needs in the imported source tree. */
const FILL: Record<string, (src: string, tmp: string) => void> = {
  read: (src) => randomFile(path.join(src, 'big.bin'), Number(a.mib)),
  stat: (src) => writeTree(path.join(src, 'tree'), treeParams(Number(a.files))),
  commit: (src) => randomFile(path.join(src, 'large.bin'), Number(a.mib)),
  write: (_src, tmp) => randomFile(path.join(tmp, 'input.bin'), Number(a.mib)),
  untar: (_src, tmp) => {
    const tree = path.join(tmp, 'tartree');
    writeTree(tree, treeParams(Number(a.files)));
    sh(`tar -C ${shq(tree)} -cf ${shq(path.join(tmp, 'tree.tar'))} .`);
  },
};

async function readOp(s: Setup, m: Mount, mib: number) {
  const dd = (p: string) => sh(`dd if=${shq(p)} of=/dev/null bs=1M status=none`);
  dd(path.join(s.src, 'big.bin'));
  const plainMs = best(tries(), () => dd(path.join(s.src, 'big.bin')));
  const servedMs = dd(path.join(m.path, 'big.bin'));
  const mountMs = best(tries(), () => dd(path.join(m.path, 'big.bin')));
  return { ms: mountMs, plainMs, ratio: plainMs / mountMs, plainMiBps: mib / (plainMs / 1000), mountMiBps: mib / (mountMs / 1000), servedMiBps: mib / (servedMs / 1000), goal: '≥ 0.5× plain (throughput)', ...folioFigures(path.join(s.src, 'big.bin'), path.join(m.path, 'big.bin'), mib, mountMs, dd) };
}

/**
 * The warm read's bound: the same file read warm from a plain copy whose pages sit in 4 KiB folios
 * (page-folios.ts), as a FUSE file's do on kernels without large folios for FUSE, and the share of
 * large folios in the plain file's and the mount's cached pages. Without a loop device or
 * mkfs.ext4 the reason is reported instead.
 */
function folioFigures(plainFile: string, mountFile: string, mib: number, mountMs: number, dd: (p: string) => number): Record<string, unknown> {
  const shares = { plainLargeFolios: foliosOf(plainFile), mountLargeFolios: foliosOf(mountFile) };
  let copy: ReturnType<typeof order0Copy> | undefined;
  try {
    copy = order0Copy(a.tmp, plainFile);
    // Its pages dropped and read back once, as the mount's were by its first (served) read.
    sh(`dd if=${shq(copy.file)} iflag=nocache count=0 status=none`);
    dd(copy.file);
    const order0Ms = best(tries(), () => dd(copy!.file));
    return { ...shares, order0MiBps: mib / (order0Ms / 1000), mountOverOrder0: order0Ms / mountMs };
  } catch (e) {
    return { ...shares, order0Error: (e as Error).message.split('\n')[0] };
  } finally {
    copy?.release();
  }
}

async function writeOp(m: Mount, tmp: string, mib: number) {
  const input = path.join(tmp, 'input.bin');
  sh(`cat ${shq(input)} > /dev/null`);
  const into = (dir: string) => () => {
    const out = path.join(dir, 'new.bin');
    const t = sh(`dd if=${shq(input)} of=${shq(out)} bs=1M status=none`);
    sh(`rm -f ${shq(out)}`);
    return t;
  };
  const plainDir = path.join(tmp, 'plain-write');
  fs.mkdirSync(plainDir, { recursive: true });
  const plainMs = best(tries(), into(plainDir));
  const mountMs = best(tries(), into(m.path));
  return { ms: mountMs, plainMs, ratio: plainMs / mountMs, plainMiBps: mib / (plainMs / 1000), mountMiBps: mib / (mountMs / 1000), goal: '≥ 0.7× plain (throughput)' };
}

async function statOp(s: Setup, m: Mount) {
  const cmd = 'find . -type f | xargs stat > /dev/null';
  const plainDir = path.join(s.src, 'tree');
  sh(cmd, plainDir);
  const plainMs = sh(cmd, plainDir);
  const coldMs = sh(cmd, path.join(m.path, 'tree'));
  const mountMs = sh(cmd, path.join(m.path, 'tree'));
  return { ms: mountMs, plainMs, coldMs, ratio: mountMs / plainMs, coldRatio: coldMs / plainMs, goal: '≤ 5× plain' };
}

async function commitOp(s: Setup, m: Mount, mib: number, rounds: number) {
  const file = path.join(m.path, 'large.bin');
  const ms: number[] = [];
  const daemonMs: number[] = [];
  const growth: number[] = [];
  const inserted: number[] = [];
  // A first commit warms the connection and the daemon's Store handle (not counted).
  await s.client.commitWorkspace(m.id);
  for (let i = 0; i < rounds; i++) {
    const page = Math.floor((mib * 256) / 2) + i * 7; // 4 KiB pages into the middle
    sh(`dd if=/dev/urandom of=${shq(file)} bs=4096 seek=${page} count=1 conv=notrunc status=none`);
    const t0 = performance.now();
    const c = await s.client.commitWorkspace(m.id);
    ms.push(performance.now() - t0);
    if (c.outcome !== 'Created') throw new Error(`commit ${i}: ${c.outcome}`);
    daemonMs.push(c.phases.daemon ?? 0);
    growth.push(c.allocatedGrowth);
    inserted.push(c.bytesInserted);
  }
  return {
    ms: median(ms),
    maxMs: Math.max(...ms),
    daemonMedianMs: median(daemonMs),
    daemonP90Ms: percentile(daemonMs, 90),
    daemonMaxMs: Math.max(...daemonMs),
    daemonMsEach: daemonMs.map((x) => Math.round(x * 10) / 10),
    allocatedGrowthMedian: median(growth),
    allocatedGrowthMax: Math.max(...growth),
    bytesInsertedMedian: median(inserted),
    rounds,
    goal: 'daemon median ≤ 10 ms, growth ≤ 64 KiB',
  };
}

/** Requests the kernel waits on, summed over the daemon's mounts (RELEASE and FORGETs get no wait). */
async function waitedRequests(client: Client): Promise<number> {
  const st = await client.daemonStatus();
  let n = 0;
  for (const m of st?.mounts ?? []) for (const [op, k] of Object.entries(m.requests ?? {})) if (!['RELEASE', 'RELEASEDIR', 'FORGET', 'BATCH_FORGET', 'INTERRUPT'].includes(op)) n += k;
  return n;
}

/** Mean µs of one listxattr(2) on `file`, from a child process (the round trip of a request that touches no Store data). */
function roundTripUs(file: string): number {
  // Compiled runs (bench/run.ts) have xattr-loop.js beside this cell's .js; source runs have .ts.
  const js = path.join(import.meta.dirname, '../lib/xattr-loop.js');
  const entry = fs.existsSync(js) ? js : path.join(import.meta.dirname, '../lib/xattr-loop.ts');
  const r = spawnSync(process.execPath, nodeArgs(entry, file, '20000'), { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`xattr-loop exited ${r.status}: ${r.stderr.slice(-1000)}`);
  return Number(r.stdout.trim());
}

async function untarOp(s: Setup, m: Mount, tmp: string) {
  const archive = path.join(tmp, 'tree.tar');
  const into = (d: string) => {
    sh(`mkdir -p ${shq(d)} && sync`);
    return sh(`tar -C ${shq(d)} -xf ${shq(archive)}`);
  };
  let k = 0;
  const plainMs = best(tries(), () => into(path.join(tmp, `plain${k++}`)));
  const r0 = await waitedRequests(s.client);
  const mountMs = best(tries(), () => into(path.join(m.path, `x${k++}`)));
  const requests = ((await waitedRequests(s.client)) - r0) / tries();
  // The floor: every request the kernel makes an untar wait on, at the cost of a request the
  // daemon answers at once. No server work can go below it; the gap above it is ours.
  const mountRtUs = roundTripUs(path.join(m.path, `x${k - 1}`));
  const plainRtUs = roundTripUs(path.join(tmp, `plain0`));
  const floorMs = (requests * mountRtUs) / 1000;
  const t0 = performance.now();
  const c = await s.client.commitWorkspace(m.id);
  const commitMs = performance.now() - t0;
  return {
    ms: mountMs,
    plainMs,
    ratio: mountMs / plainMs,
    commitMs,
    commitOutcome: c.outcome,
    requestsPerFile: requests / Number(a.files),
    roundTripUs: mountRtUs,
    plainSyscallUs: plainRtUs,
    floorMs,
    floorRatio: floorMs / plainMs,
    /** The daemon's own time against the floor (issue 18's goal: ≤ 1.2×). */
    ownRatio: mountMs / floorMs,
    goal: '≤ 3× plain',
  };
}

/** One op on a mounted Workspace (each with its own plain-directory run). */
function runOp(s: Setup, m: Mount, op: string, tmp: string): Promise<Record<string, unknown>> {
  if (op === 'read') return readOp(s, m, Number(a.mib));
  if (op === 'stat') return statOp(s, m);
  if (op === 'commit') return commitOp(s, m, Number(a.mib), Number(a.rounds));
  if (op === 'write') return writeOp(m, tmp, Number(a.mib));
  return untarOp(s, m, tmp);
}

const sizeOf = (op: string) => (op === 'stat' || op === 'untar' ? { files: Number(a.files) } : { mib: Number(a.mib) });

/** Runs `ops` against one Store, one daemon and one mount (the quick tier runs all four so). */
async function runOps(tmp: string, ops: string[]): Promise<Record<string, unknown>[]> {
  const s = await setup(tmp, (src) => {
    for (const op of ops) FILL[op]!(src, tmp);
  });
  try {
    const m = await s.mount();
    const out: Record<string, unknown>[] = [];
    try {
      for (const op of ops) out.push({ case: op, op, ...sizeOf(op), ...(await runOp(s, m, op, tmp)) });
    } finally {
      await m.end();
    }
    return out;
  } finally {
    await s.done();
  }
}

/** The figures of an A/B that say which side won, per round. */
const AB_KEYS = ['ratio', 'coldRatio', 'ownRatio', 'ms', 'maxMs', 'daemonMedianMs', 'allocatedGrowthMax', 'coldMs', 'plainMs', 'requestsPerFile', 'floorMs', 'mountMiBps', 'plainMiBps', 'servedMiBps'];

/**
 * A mount, tried a second time when the first did not come up: each A/B mount starts a daemon
 * and a serving thread, which on a loaded machine can take longer than the daemon waits.
 */
async function mountRetrying(s: Setup): Promise<Mount> {
  try {
    return await s.mount();
  } catch {
    await s.client.stopDaemon({ discard: true }).catch(() => {});
    return s.mount();
  }
}

/** `op` with kernel feature `feature` on and off, alternated on two Stores (see the header). */
async function runAb(tmp: string, op: string, feature: string, rounds: number): Promise<Record<string, unknown>> {
  const base = a.features ? `${a.features},` : '';
  const sides = (['on', 'off'] as const).map((side) => {
    const dir = path.join(tmp, side);
    fs.mkdirSync(dir, { recursive: true });
    return { side, dir, spec: `${base}${side === 'on' ? '+' : '-'}${feature}`, runs: [] as Record<string, unknown>[] };
  });
  const stores: Setup[] = [];
  try {
    for (const x of sides) stores.push(await setup(x.dir, (src) => FILL[op]!(src, x.dir)));
    for (let i = 0; i < rounds; i++) {
      // on, off, then off, on: neither side always runs first.
      for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) {
        const x = sides[k]!;
        // The daemon starts at the first mount of its Store and reads the features then.
        process.env[FEATURES_ENV] = x.spec;
        const m = await mountRetrying(stores[k]!);
        try {
          x.runs.push(await runOp(stores[k]!, m, op, x.dir));
        } finally {
          await m.end();
          await stores[k]!.client.stopDaemon({ discard: true }).catch(() => {});
        }
      }
    }
  } finally {
    for (const s of stores) await s.done();
  }
  const summary = (runs: Record<string, unknown>[]) =>
    Object.fromEntries(AB_KEYS.filter((k) => typeof runs[0]?.[k] === 'number').map((k) => [k, median(runs.map((r) => r[k] as number))]));
  return { op, ab: feature, abRounds: rounds, ...sizeOf(op), on: summary(sides[0]!.runs), off: summary(sides[1]!.runs), runs: sides.map((x) => ({ side: x.side, spec: x.spec, ratios: x.runs.map((r) => r.ratio) })) };
}

const round3 = (o: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v && typeof v === 'object' && !Array.isArray(v) ? round3(v as Record<string, unknown>) : v]));

async function fuseMount(args: Given<typeof FUSE_OPTIONS, 'tmp'>): Promise<CellResult> {
  a = args;
  const op = a.op ?? '';
  const why = !fuseAvailable().ok ? fuseAvailable().reason : process.getuid?.() !== 0 ? 'needs root (kernel backend)' : undefined;
  if (why) return { skipped: why };
  if (a.features !== undefined) process.env[FEATURES_ENV] = a.features;
  const ops = op === 'all' ? ['read', 'stat', 'commit', 'untar'] : [op];
  if (!ops.every((o) => o in FILL)) throw new Error(`--op must be read, stat, commit, write, untar or all (got ${JSON.stringify(op)})`);
  if (a.ab) return round3(await runAb(a.tmp, op, a.ab, Number(a['ab-rounds'])));
  const cases = (await runOps(a.tmp, ops)).map(round3);
  if (op === 'all') return { op, cases };
  else return { ...cases[0]! };
}

export const FUSE_MOUNT = cellSpec({
  id: 'layerfs-fuse-mount',
  tool: 'layerfs',
  args: FUSE_OPTIONS,
  required: ['tmp'],
  run: fuseMount,
});

