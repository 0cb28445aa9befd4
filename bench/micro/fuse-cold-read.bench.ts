// FUSE cold reads, pack rows read by the addon against rows read by SELECT, same run: two Stores
// with the same content (a random --mib MiB file; the second Store a copy of the first), each
// mounted by its own daemon, one started with LAYERFS_PACK_ROWS=0. Per round (the daemons'
// order alternating): `dd bs=1M` of the plain file, then of each mount's file, every file's
// pages dropped first with posix_fadvise(DONTNEED) (the Store files' pages stay cached); the
// daemon's CPU over its `dd` from /proc/<pid>/stat, the `dd`'s own from getrusage; at the end
// each daemon's peak resident set (VmHWM). Needs root
// (kernel backend) and /dev/fuse. With --perf FILE, `perf record -g` of the addon daemon over
// three more cold reads. With --before DIR (another checkout of the package, its addon built),
// the first Store is served by that checkout's daemon and the second by this one's, both reading
// rows by the addon: a before/after of the daemon's code in the same run.
//   node --import tsx bench/micro/fuse-cold-read.bench.ts --tmp DIR [--mib 256] [--rounds 6] [--perf FILE] [--before DIR]  → JSON lines
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { arg } from '../lib/micro-ab.js';
import { twinStores } from '../lib/twin-stores.js';

const tmp = path.resolve(arg('--tmp') ?? '');
if (!arg('--tmp') || fs.existsSync(path.join(tmp, 'a.sqlite'))) throw new Error('--tmp DIR: a new scratch directory');
const mib = Number(arg('--mib', '256'));
const rounds = Number(arg('--rounds', '6'));
const perfOut = arg('--perf');
const before = arg('--before');
type ClientClass = typeof Client;
const BeforeClient: ClientClass = before ? ((await import(path.resolve(before, 'lib/sdk/index.ts'))) as { Client: ClientClass }).Client : Client;

const PY = String.raw`
import json, os, subprocess, sys, time, resource
p = sys.argv[1]
fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
t = time.perf_counter()
subprocess.run(['dd', 'if=' + p, 'of=/dev/null', 'bs=1M', 'status=none'], check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({'s': time.perf_counter() - t, 'cpu': r.ru_utime + r.ru_stime}))
`;

function coldRead(file: string): { s: number; cpu: number } {
  const r = spawnSync('python3', ['-c', PY, file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cold read of ${file}: ${r.stderr}`);
  return JSON.parse(r.stdout) as { s: number; cpu: number };
}

/** User + system CPU seconds of a process so far. */
function cpuOf(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;

interface Served {
  client: Client;
  at: string;
  id: string;
  pid: number;
  tag: string;
}

const src = path.join(tmp, 'src');
fs.mkdirSync(src, { recursive: true });
spawnSync('sh', ['-c', `head -c ${mib * 1048576} /dev/urandom > '${src}/a.bin'`]);
const stores = await twinStores(tmp, src);
const served: Served[] = [];
try {
  for (const [store, tag, env, C] of [
    [stores[0]!, before ? 'before' : 'select', before ? '1' : '0', BeforeClient],
    [stores[1]!, before ? 'after' : 'addon', '1', Client],
  ] as const) {
    process.env.LAYERFS_PACK_ROWS = env;
    const client = C.connect(store);
    const at = path.join(tmp, `w-${tag}`);
    const ws = await client.createWorkspace('main', { at, projection: 'fuse' });
    const status = await client.daemonStatus();
    served.push({ client, at, id: ws.id, pid: status!.pid, tag });
  }
  delete process.env.LAYERFS_PACK_ROWS;
  // Warm-up: the reader threads start in the background after a mount.
  for (const m of served) coldRead(path.join(m.at, 'a.bin'));
  const figs = new Map(served.map((m) => [m.tag, { s: [] as number[], daemon: [] as number[], dd: [] as number[], ratio: [] as number[] }]));
  for (let r = 0; r < rounds; r++) {
    const plain = coldRead(path.join(src, 'a.bin'));
    const line: Record<string, unknown> = { round: r, plainMiBps: Math.round(mib / plain.s) };
    for (const m of r % 2 ? [...served].reverse() : served) {
      const c0 = cpuOf(m.pid);
      const x = coldRead(path.join(m.at, 'a.bin'));
      const f = figs.get(m.tag)!;
      f.s.push(x.s);
      f.daemon.push(((cpuOf(m.pid) - c0) * 1000) / mib);
      f.dd.push((x.cpu * 1000) / mib);
      f.ratio.push(plain.s / x.s);
      line[`${m.tag}MiBps`] = Math.round(mib / x.s);
    }
    line.load = load();
    console.log(JSON.stringify(line));
  }
  for (const [tag, f] of figs) {
    const r2 = (x: number) => Math.round(x * 100) / 100;
    const pid = served.find((m) => m.tag === tag)!.pid;
    const hwm = /VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    console.log(JSON.stringify({ rows: tag, daemonVmHWMMiB: hwm ? Math.round(Number(hwm) / 102.4) / 10 : null, MiBps: Math.round(mib / median(f.s)), timesPlain: r2(median(f.ratio)), timesPlainEach: f.ratio.map(r2), daemonMsPerMiB: r2(median(f.daemon)), daemonEach: f.daemon.map(r2), ddMsPerMiB: r2(median(f.dd)) }));
  }
  if (perfOut) {
    const m = served[1]!;
    const perf = spawn('perf', ['record', '-F', '2000', '-g', '-p', String(m.pid), '-o', perfOut], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 500));
    for (let i = 0; i < 3; i++) coldRead(path.join(m.at, 'a.bin'));
    perf.kill('SIGINT');
    await new Promise((r) => perf.on('exit', r));
  }
} finally {
  for (const m of served) {
    await m.client.endWorkspace(m.id, { discard: true }).catch(() => {});
    await m.client.stopDaemon({ discard: true }).catch(() => {});
    m.client.close();
  }
}
