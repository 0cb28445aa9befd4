// Sequential write of a new file into a FUSE Workspace against a plain directory, two daemons in
// the same run: the code of another checkout (--before DIR, its addon built) and this one, each
// with its own Store and Workspace (writeback cache off, the default). Per round the three
// targets (plain directory of the same file system, before, after) are written in a rotated
// order, each the same way: the earlier target file removed, `sync`, the page cache dropped
// (`echo 1 > /proc/sys/vm/drop_caches`, unless --no-drop) and the random source file read back
// into it, then `dd bs=1M` of the source to a new file of --write MiB, close included
// (`conv=fsync` on all three with --fsync). Reports each round's MiB/s, the ratios to the plain
// write of the same round, the daemons' CPU over their write, and the medians and spreads.
// --unaligned: the writer is python3 copying 1 MiB at a time from a bytes object (a buffer that
// is not page-aligned), instead of dd (whose buffer is).
// --read-back: each file is then read back once (`dd bs=1M` to /dev/null), what a reader of a file
// just written gets (from the page cache, or through the daemon).
// --after-env K=V,K=V / --before-env K=V: environment of that side's daemon only (a switch to A/B;
// --before . compares two settings of this checkout).
// Needs root (kernel backend, drop_caches) and /dev/fuse.
//   node --import tsx bench/micro/fuse-write.bench.ts --tmp DIR --before DIR [--write 1024] [--rounds 6] [--fsync] [--no-drop] [--read-back] [--unaligned] [--after-env K=V] [--before-env K=V]  → JSON lines
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { twinStores } from '../lib/twin-stores.js';
import { arg, clientOf, scratchAndBefore, sh, sideEnv, withEnv } from '../lib/micro-ab.js';

const { tmp, before } = scratchAndBefore();
const writeMib = Number(arg('--write', '1024'));
const rounds = Number(arg('--rounds', '6'));
const fsync = process.argv.includes('--fsync');
const drop = !process.argv.includes('--no-drop');
const readBack = process.argv.includes('--read-back');
const unaligned = process.argv.includes('--unaligned');
const PY_COPY = String.raw`import os, sys
src = open(sys.argv[1], "rb", buffering=0); dst = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
while True:
    b = src.read(1 << 20)
    if not b: break
    os.write(dst, b)
if len(sys.argv) > 3: os.fsync(dst)
os.close(dst)`;
const BeforeClient = await clientOf(before);

const source = path.join(tmp, 'w.src');
/** The same start for every write: no dirty pages, the page cache dropped, the source cached. */
function settle(): void {
  sh('sync');
  if (drop) fs.writeFileSync('/proc/sys/vm/drop_caches', '1');
  sh(`cat '${source}' > /dev/null`);
}
/** Seconds of `dd` of the source to `to`, close (and with --fsync the fsync) included. */
function write(to: string): number {
  fs.rmSync(to, { force: true });
  settle();
  const t = performance.now();
  if (unaligned) {
    const r = spawnSync('python3', ['-c', PY_COPY, source, to, ...(fsync ? ['fsync'] : [])], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`python copy: ${r.stderr}`);
  } else sh(`dd if='${source}' of='${to}' bs=1M status=none${fsync ? ' conv=fsync' : ''}`);
  return (performance.now() - t) / 1000;
}
function cpuOf(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}
const hwmOf = (pid: number) => Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
const median = (a: number[]) => {
  const s = sorted(a);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const r2 = (x: number) => Math.round(x * 100) / 100;

interface Side {
  tag: string;
  client?: Client;
  file: string;
  id?: string;
  pid?: number;
}

const src = path.join(tmp, 'src');
fs.mkdirSync(src, { recursive: true });
sh(`head -c 65536 /dev/urandom > '${src}/a.bin'; head -c ${writeMib * 1048576} /dev/urandom > '${source}'`);
const stores = await twinStores(tmp, src);
const plainDir = path.join(tmp, 'plain');
fs.mkdirSync(plainDir);
const sides: Side[] = [{ tag: 'plain', file: path.join(plainDir, 'w.bin') }];
const figs: Record<string, number[]> = {};
const push = (k: string, v: number) => (figs[k] ??= []).push(v);
try {
  for (const [store, tag, C] of [
    [stores[0], 'before', BeforeClient],
    [stores[1], 'after', Client],
  ] as const) {
    const client = C.connect(store);
    const at = path.join(tmp, `w-${tag}`);
    const ws = await withEnv(sideEnv(tag), () => client.createWorkspace('main', { at, projection: 'fuse' }));
    sides.push({ tag, client, file: path.join(at, 'w.bin'), id: ws.id, pid: (await client.daemonStatus())!.pid });
  }
  for (let r = 0; r < rounds; r++) {
    const line: Record<string, unknown> = { round: r, load: load() };
    const order = [0, 1, 2].map((i) => sides[(i + r) % 3]!);
    const secs: Record<string, number> = {};
    for (const s of order) {
      const c0 = s.pid ? cpuOf(s.pid) : 0;
      secs[s.tag] = write(s.file);
      push(`${s.tag}MiBps`, writeMib / secs[s.tag]!);
      line[s.tag] = Math.round(writeMib / secs[s.tag]!);
      if (s.pid) {
        const cpu = cpuOf(s.pid) - c0;
        push(`${s.tag}DaemonCpuS`, cpu);
        line[`${s.tag}DaemonCpuS`] = r2(cpu);
      }
      if (readBack) {
        const t = performance.now();
        sh(`dd if='${s.file}' of=/dev/null bs=1M status=none`);
        const mibps = writeMib / ((performance.now() - t) / 1000);
        push(`${s.tag}ReadBackMiBps`, mibps);
        line[`${s.tag}ReadBack`] = Math.round(mibps);
      }
      fs.rmSync(s.file, { force: true });
    }
    for (const tag of ['before', 'after']) {
      push(`${tag}TimesPlain`, secs.plain! / secs[tag]!);
      line[`${tag}TimesPlain`] = r2(secs.plain! / secs[tag]!);
    }
    push('afterTimesBefore', secs.before! / secs.after!);
    line.order = order.map((s) => s.tag).join(',');
    line.loadAfter = load();
    console.log(JSON.stringify(line));
  }
  const summary: Record<string, unknown> = { writeMiB: writeMib, fsync, drop, readBack, unaligned, rounds, afterEnv: arg('--after-env') ?? '', beforeEnv: arg('--before-env') ?? '' };
  for (const [k, v] of Object.entries(figs)) summary[k] = { median: r2(median(v)), min: r2(sorted(v)[0]!), max: r2(sorted(v).at(-1)!) };
  for (const s of sides) if (s.pid) summary[`${s.tag}VmHWMMiB`] = Math.round(hwmOf(s.pid));
  console.log(JSON.stringify(summary));
} finally {
  for (const s of sides) {
    if (!s.client) continue;
    await s.client.endWorkspace(s.id!, { discard: true }).catch(() => {});
    await s.client.stopDaemon({ discard: true }).catch(() => {});
    s.client.close();
  }
}
