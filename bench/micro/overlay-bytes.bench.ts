// What a FUSE Workspace's daemon holds per dirty file, in-process and without a mount: an
// Overlay over a one-file state, then FILES files of 64 B–12 KiB created under a temporary name,
// written, closed, utimens'd and renamed over their final name as rsync does, in directories of
// 100. Memory is read after two full collections, before and after, and divided by FILES. With
// --before DIR the other checkout runs the same loop in the same rounds, alternated per round.
//   node --import tsx bench/micro/overlay-bytes.bench.ts [--files N] [--rounds N] [--before DIR]  → JSON lines
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { arg, clientOf } from '../lib/micro-ab.js';

const here = fileURLToPath(import.meta.url);
const root = path.resolve(path.dirname(here), '../..');

interface OverlayLike {
  resolve(parts: Buffer[]): number;
  mkdir(parent: number, name: Buffer, mode: number): number;
  create(parent: number, name: Buffer, mode: number): { serial: number; fh: number };
  write(fh: number, src: Buffer, pos: number): number;
  release(fh: number): void;
  utimens(serial: number, atimeNs: bigint | null, mtimeNs: bigint | null): void;
  rename(srcParent: number, srcName: Buffer, dstParent: number, dstName: Buffer): void;
  pending(): { records: number };
  dispose(): void;
}
type OverlayClass = new (store: unknown, root: Buffer, target: unknown, opts: { spoolDir: string }) => OverlayLike;

function settled(): NodeJS.MemoryUsage {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  gc();
  return process.memoryUsage();
}

/** One checkout's loop in this process (`--run CHECKOUT`): prints bytes per file. */
async function runLoop(checkout: string, dir: string, files: number): Promise<void> {
  const Client = await clientOf(checkout);
  const { Store } = (await import(path.resolve(checkout, 'lib/store/index.ts'))) as { Store: { open(p: string): { close(): void } } };
  const { Overlay } = (await import(path.resolve(checkout, 'lib/fuse/overlay.ts'))) as { Overlay: OverlayClass };
  const src = path.join(dir, 'src');
  fs.mkdirSync(src, { recursive: true });
  fs.writeFileSync(path.join(src, 'README'), 'one file\n');
  const dbPath = path.join(dir, 'store.layerfs');
  const client = Client.create(dbPath);
  const init = await client.initLayerStack({ name: 'bench', source: src });
  client.forkBranch({ name: 'main', layer: init.layer.id });
  const info = client.branch('main');
  const store = Store.open(dbPath);
  fs.mkdirSync(path.join(dir, 'spool'));
  const target = { branchId: Buffer.from(info.id, 'hex'), expectedHead: null, expectedBase: Buffer.from(info.baseLayerId, 'hex') };
  const ov = new Overlay(store, Buffer.from(info.rootId, 'hex'), target, { spoolDir: path.join(dir, 'spool') });
  const content = Buffer.alloc(12 * 1024, 'x');
  const m0 = settled();
  let parent = 1;
  for (let i = 0; i < files; i++) {
    if (i % 100 === 0) parent = ov.mkdir(1, Buffer.from(`d${i / 100}`), 0o755);
    const name = Buffer.from(`f${i}.js`);
    const tmp = Buffer.from(`.f${i}.js.XXXXXX`);
    const { serial, fh } = ov.create(parent, tmp, 0o644);
    ov.write(fh, content.subarray(0, 64 + (Math.imul(i + 1, 0x9e3779b1) >>> 0) % (12 * 1024 - 64)), 0);
    ov.release(fh);
    ov.utimens(serial, null, 1_700_000_000_000_000_000n + BigInt(i));
    ov.rename(parent, tmp, parent, name);
  }
  const m1 = settled();
  const per = (k: keyof NodeJS.MemoryUsage) => Math.round((m1[k] - m0[k]) / files);
  console.log(JSON.stringify({ files, pending: ov.pending().records, heapPerFile: per('heapUsed'), buffersPerFile: per('arrayBuffers'), rssPerFile: per('rss') }));
  ov.dispose();
  store.close();
  await client.close();
}

const run = arg('--run');
if (run) {
  await runLoop(run, arg('--dir')!, Number(arg('--files')));
} else {
  const files = arg('--files', '50000')!;
  const rounds = Number(arg('--rounds', '2'));
  const before = arg('--before');
  const sides: [string, string][] = [['now', root], ...(before ? [['before', path.resolve(before)] as [string, string]] : [])];
  for (let r = 0; r < rounds; r++) {
    // The order alternates per round so neither side always runs on the warmer machine.
    for (const [label, checkout] of r % 2 === 0 ? sides : [...sides].reverse()) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-ovb-'));
      try {
        const p = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', here, '--run', checkout, '--dir', dir, '--files', files], { cwd: root, encoding: 'utf8' });
        if (p.status !== 0) throw new Error(`${label}: ${p.stderr}`);
        console.log(JSON.stringify({ round: r, side: label, load: os.loadavg()[0]!.toFixed(1), ...JSON.parse(p.stdout.trim().split('\n').pop()!) }));
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  }
}
