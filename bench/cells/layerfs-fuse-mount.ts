// Cell: a FUSE Workspace (projection 'fuse', served by the Store's daemon) against the same work
// on a plain directory, in the same run. One --op per run:
//   read    sequential `dd bs=1M` of a --mib MiB random file, page cache warm (best of 3 each);
//           also the first read through a fresh mount (every byte served by the daemon)
//   stat    `find . -type f | xargs stat` over a --files tree (cold = first pass on a fresh
//           mount, warm = second)
//   commit  4 KiB overwrite (dd conv=notrunc, a child process) in the middle of a --mib MiB
//           file, then client.commitWorkspace (SDK wall time, as a caller sees it), --rounds
//           times; Store growth is the receipt's allocatedGrowth (the daemon's write transaction)
//   untar   `tar -xf` of a --files tree archive into a fresh directory (best of 3 each)
// Every access into the mount is a child process (sh, dd, find, tar); this process only talks to
// the daemon through the SDK.
//   node --import tsx bench/cells/layerfs-fuse-mount.ts --op read --tmp SCRATCH --tier quick [--mib 16] [--files 1000] [--rounds 5]

import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '../../lib/sdk/index.js';
import { fuseAvailable } from '../../lib/mount/index.js';
import { writeTree, treeParams } from '../fixtures/tree.js';
import { emit, fail, shq } from '../lib/cell.js';

const CELL = 'layerfs-fuse-mount';
const { values: a } = parseArgs({
  options: {
    tmp: { type: 'string' },
    tier: { type: 'string', default: '?' },
    op: { type: 'string' },
    mib: { type: 'string', default: '16' },
    files: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '5' },
  },
});
const tier = a.tier!;
const op = a.op ?? '';

/** Wall ms of a shell command (a child process: the only way this cell touches a mount). */
function sh(cmd: string, cwd?: string): number {
  const t0 = performance.now();
  const r = spawnSync('sh', ['-c', cmd], { cwd, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} exited ${r.status}: ${r.stderr.slice(-1000)}`);
  return performance.now() - t0;
}

const best = (n: number, f: () => number) => Math.min(...Array.from({ length: n }, f));
const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)]!;

function randomFile(file: string, mib: number): void {
  const fd = fs.openSync(file, 'w');
  try {
    for (let left = mib; left > 0; left -= Math.min(left, 16)) fs.writeSync(fd, randomBytes(Math.min(left, 16) << 20));
  } finally {
    fs.closeSync(fd);
  }
}

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
  const client = Client.create(path.join(tmp, 'store.sqlite'));
  const t0 = performance.now();
  const init = await client.initLayerStack({ name: 'm', source: src });
  const importMs = performance.now() - t0;
  client.forkBranch({ name: 'main', layer: init.layer.id });
  let n = 0;
  return {
    client,
    src,
    importMs,
    async mount() {
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

async function readOp(tmp: string, mib: number) {
  const s = await setup(tmp, (src) => randomFile(path.join(src, 'big.bin'), mib));
  try {
    const dd = (p: string) => sh(`dd if=${shq(p)} of=/dev/null bs=1M status=none`);
    dd(path.join(s.src, 'big.bin'));
    const plainMs = best(3, () => dd(path.join(s.src, 'big.bin')));
    const m = await s.mount();
    const servedMs = dd(path.join(m.path, 'big.bin'));
    const mountMs = best(3, () => dd(path.join(m.path, 'big.bin')));
    await m.end();
    return { ms: mountMs, plainMs, ratio: plainMs / mountMs, plainMiBps: mib / (plainMs / 1000), mountMiBps: mib / (mountMs / 1000), servedMiBps: mib / (servedMs / 1000), goal: '≥ 0.5× plain (throughput)' };
  } finally {
    await s.done();
  }
}

async function statOp(tmp: string, files: number) {
  const s = await setup(tmp, (src) => writeTree(src, treeParams(files)));
  try {
    const cmd = 'find . -type f | xargs stat > /dev/null';
    sh(cmd, s.src);
    const plainMs = sh(cmd, s.src);
    const m = await s.mount();
    const coldMs = sh(cmd, m.path);
    const mountMs = sh(cmd, m.path);
    await m.end();
    return { ms: mountMs, plainMs, coldMs, ratio: mountMs / plainMs, coldRatio: coldMs / plainMs, goal: '≤ 5× plain' };
  } finally {
    await s.done();
  }
}

async function commitOp(tmp: string, mib: number, rounds: number) {
  const s = await setup(tmp, (src) => randomFile(path.join(src, 'large.bin'), mib));
  try {
    const m = await s.mount();
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
    await m.end();
    return {
      ms: median(ms),
      maxMs: Math.max(...ms),
      daemonMedianMs: median(daemonMs),
      allocatedGrowthMedian: median(growth),
      allocatedGrowthMax: Math.max(...growth),
      bytesInsertedMedian: median(inserted),
      rounds,
      goal: 'commit ≤ 20 ms, growth ≤ 64 KiB',
    };
  } finally {
    await s.done();
  }
}

async function untarOp(tmp: string, files: number) {
  const s = await setup(tmp, () => {});
  try {
    const tree = path.join(tmp, 'tree');
    writeTree(tree, treeParams(files));
    const archive = path.join(tmp, 'tree.tar');
    sh(`tar -C ${shq(tree)} -cf ${shq(archive)} .`);
    const into = (d: string) => {
      sh(`mkdir -p ${shq(d)} && sync`);
      return sh(`tar -C ${shq(d)} -xf ${shq(archive)}`);
    };
    let k = 0;
    const plainMs = best(3, () => into(path.join(tmp, `plain${k++}`)));
    const m = await s.mount();
    const mountMs = best(3, () => into(path.join(m.path, `x${k++}`)));
    const t0 = performance.now();
    const c = await s.client.commitWorkspace(m.id);
    const commitMs = performance.now() - t0;
    await m.end();
    return { ms: mountMs, plainMs, ratio: mountMs / plainMs, commitMs, commitOutcome: c.outcome, goal: '≤ 3× plain' };
  } finally {
    await s.done();
  }
}

try {
  if (a.tmp === undefined) throw new Error('--tmp is required');
  const why = !fuseAvailable().ok ? fuseAvailable().reason : process.getuid?.() !== 0 ? 'needs root (kernel backend)' : undefined;
  if (why) {
    process.stdout.write(JSON.stringify({ cell: CELL, tier, skipped: why }) + '\n');
    process.exit(0);
  }
  const tmp = a.tmp;
  const mib = Number(a.mib);
  const files = Number(a.files);
  let out: Record<string, unknown>;
  if (op === 'read') out = await readOp(tmp, mib);
  else if (op === 'stat') out = await statOp(tmp, files);
  else if (op === 'commit') out = await commitOp(tmp, mib, Number(a.rounds));
  else if (op === 'untar') out = await untarOp(tmp, files);
  else throw new Error(`--op must be read, stat, commit or untar (got ${JSON.stringify(op)})`);
  const rounded = Object.fromEntries(Object.entries(out).map(([k, v]) => [k, typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v]));
  emit({ cell: CELL, tier, op, mib, files, ...rounded });
} catch (err) {
  fail(CELL, tier, err);
}
