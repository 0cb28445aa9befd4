// Figures for docs/FUSE.md (run by hand as root, not part of the suite):
//   node --import tsx test/mount/measure.ts [read|stat|untar|commit|all] [--backend=kernel|fuse-native] [--files=N] [--mib=N]
// Each figure is the same work through a mount (served by the daemon) and on a plain directory,
// warm caches, same run. Scratch space: $LAYERFS_MEASURE_DIR or a temporary directory.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { commitMounted, mountWorkspace, stopDaemon, unmountWorkspace, type Backend } from '../../lib/mount/index.js';
import { writeTree, treeParams } from '../../bench/fixtures/tree.js';
import { Store } from '../../lib/store/index.js';

const args = process.argv.slice(2);
const what = args.find((a) => !a.startsWith('--')) ?? 'all';
const opt = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const backend = opt('backend') as Backend | undefined;
const root = process.env.LAYERFS_MEASURE_DIR ?? mkdtempSync(join(tmpdir(), 'layerfs-measure-'));

function sh(cmd: string, cwd?: string): number {
  const t0 = performance.now();
  const r = spawnSync('sh', ['-c', cmd], { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
  if (r.status !== 0) throw new Error(`${cmd} failed (${r.status})`);
  return (performance.now() - t0) / 1000;
}

async function setup(name: string, fill: (src: string) => void) {
  const dir = join(root, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'src'), { recursive: true });
  fill(join(dir, 'src'));
  const storePath = join(dir, 'store.sqlite');
  const client = Client.create(storePath);
  const t0 = performance.now();
  const init = await client.initLayerStack({ name: 'm', source: join(dir, 'src') });
  const importS = (performance.now() - t0) / 1000;
  client.forkBranch({ name: 'main', layer: init.layer.id });
  let n = 0;
  const mount = async () => {
    const b = client.branch('main');
    const path = join(dir, `mnt${n++}`);
    mkdirSync(path);
    const workspaceId = randomBytes(16).toString('hex');
    const r = await mountWorkspace(storePath, { workspaceId, branchId: b.id, path, expectedHead: b.headCommitId, expectedBase: b.baseLayerId, rootId: b.rootId, ...(backend ? { backend } : {}) });
    return { path, workspaceId, backend: r.backend, unmount: () => unmountWorkspace(storePath, workspaceId, { discard: true }) };
  };
  return { dir, src: join(dir, 'src'), storePath, client, importS, mount, done: async () => { await stopDaemon(storePath, { discard: true }); client.close(); rmSync(dir, { recursive: true, force: true }); } };
}

function report(name: string, fields: Record<string, string | number>): void {
  console.log(`${name}: ${Object.entries(fields).map(([k, v]) => `${k}=${typeof v === 'number' ? (Math.round(v * 1000) / 1000).toString() : v}`).join(' ')}`);
}

async function readFigure(): Promise<void> {
  const mib = Number(opt('mib') ?? 1024);
  const s = await setup('read', (src) => {
    const fd = openSync(join(src, 'big.bin'), 'w');
    for (let i = 0; i < mib / 16; i++) writeSync(fd, randomBytes(16 << 20));
    closeSync(fd);
  });
  try {
    const dd = (p: string) => sh(`dd if=${p} of=/dev/null bs=1M status=none`);
    const best = (p: string, n = 3) => Math.min(...Array.from({ length: n }, () => dd(p)));
    dd(join(s.src, 'big.bin'));
    const plain = best(join(s.src, 'big.bin'));
    let m = await s.mount();
    const first = dd(join(m.path, 'big.bin'));
    await m.unmount();
    // A fresh mount: the kernel's page cache for it is empty, every byte comes through the daemon.
    let served = Infinity;
    let warm = Infinity;
    for (let i = 0; i < 2; i++) {
      m = await s.mount();
      served = Math.min(served, dd(join(m.path, 'big.bin')));
      warm = Math.min(warm, best(join(m.path, 'big.bin')));
      await m.unmount();
    }
    report(`sequential read of ${mib} MiB (${m.backend})`, {
      plainMiBps: mib / plain,
      firstReadMiBps: mib / first,
      servedByDaemonMiBps: mib / served,
      warmMiBps: mib / warm,
      servedRatio: plain / served,
      warmRatio: plain / warm,
      importS: s.importS,
    });
  } finally {
    await s.done();
  }
}

async function statFigure(): Promise<void> {
  const files = Number(opt('files') ?? 100_000);
  const s = await setup('stat', (src) => writeTree(src, treeParams(files)));
  try {
    const cmd = 'find . -type f | xargs stat > /dev/null';
    sh(cmd, s.src);
    const plain = sh(cmd, s.src);
    const m = await s.mount();
    const cold = sh(cmd, m.path);
    const warm = sh(cmd, m.path);
    await m.unmount();
    report(`find -type f | xargs stat over ${files} files (${m.backend})`, { plainS: plain, coldMountS: cold, warmMountS: warm, coldRatio: cold / plain, warmRatio: warm / plain, importS: s.importS });
  } finally {
    await s.done();
  }
}

async function untarFigure(): Promise<void> {
  const files = Number(opt('files') ?? 10_000);
  const s = await setup('untar', () => {});
  try {
    const tree = join(s.dir, 'tree');
    writeTree(tree, treeParams(files));
    const archive = join(s.dir, 'tree.tar');
    sh(`tar -C ${tree} -cf ${archive} .`);
    // Best of three each, after a sync (writeback of earlier runs slows plain extraction a lot here).
    const untarInto = (d: string) => {
      sh(`mkdir -p ${d} && sync`);
      return sh(`tar -C ${d} -xf ${archive}`);
    };
    const plain = Math.min(...[0, 1, 2].map((i) => untarInto(join(s.dir, `plain${i}`))));
    const m = await s.mount();
    const mounted = Math.min(...[0, 1, 2].map((i) => untarInto(join(m.path, `x${i}`))));
    const t0 = performance.now();
    const c = await commitMounted(s.storePath, m.workspaceId);
    const commitS = (performance.now() - t0) / 1000;
    await m.unmount();
    report(`untar ${files} files (${m.backend})`, { plainS: plain, mountS: mounted, ratio: mounted / plain, commitS, commitOutcome: c.outcome });
  } finally {
    await s.done();
  }
}

async function commitFigure(): Promise<void> {
  const mib = Number(opt('mib') ?? 500);
  const s = await setup('commit', (src) => {
    const fd = openSync(join(src, 'large.bin'), 'w');
    for (let i = 0; i < mib / 4; i++) writeSync(fd, randomBytes(4 << 20));
    closeSync(fd);
  });
  try {
    const m = await s.mount();
    const allocated = () => {
      const st = Store.open(s.storePath, { readonly: true });
      try {
        return st.allocatedBytes();
      } finally {
        st.close();
      }
    };
    const rows: Record<string, number>[] = [];
    for (let i = 0; i < 3; i++) {
      const at = Math.floor(mib / 2) * 256 + i * 7; // 4 KiB pages into the middle
      sh(`dd if=/dev/urandom of=${join(m.path, 'large.bin')} bs=4096 seek=${at} count=1 conv=notrunc status=none`);
      const allocated0 = allocated();
      const c = await commitMounted(s.storePath, m.workspaceId);
      if (c.outcome !== 'Created') throw new Error(c.outcome);
      rows.push({ commitMs: c.ms, objectsInserted: c.objectsInserted, bytesInserted: c.bytesInserted, chunksHashed: c.chunksHashed, bytesRead: c.bytesRead, allocatedGrowth: allocated() - allocated0 });
    }
    await m.unmount();
    rows.forEach((r, i) => report(`4 KiB overwrite in a ${mib} MiB file, commit #${i + 1} (${m.backend})`, r));
  } finally {
    await s.done();
  }
}

const all: Record<string, () => Promise<void>> = { read: readFigure, stat: statFigure, untar: untarFigure, commit: commitFigure };
for (const [name, fn] of Object.entries(all)) if (what === 'all' || what === name) await fn();
if (!process.env.LAYERFS_MEASURE_DIR) rmSync(root, { recursive: true, force: true });
