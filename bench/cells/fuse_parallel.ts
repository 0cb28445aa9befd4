// Cell: parallel serving of one FUSE Workspace (kernel backend), reader threads on against off,
// same run. Two Stores with the same content (the second a copy of the first), each with its own
// daemon: one started with reader threads (the default), one with LAYERFS_FUSE_READERS=0 (the
// serving thread answers every READ). Rounds are interleaved; each figure is the median of
// --rounds. Per round and daemon:
//   cold     one `dd bs=1M` of a random --mib MiB file after posix_fadvise(DONTNEED) on it, against
//            the same on a plain file (the Store file's pages stay cached on both runs)
//   pair     two `dd` processes reading two different such files at once (both dropped first):
//            their combined throughput over one reader's
//   bounds   the same pair on the plain files, and two `sha256sum` of cached files against one:
//            the speedup this machine grants a second reader at this moment (load included);
//            and the CPU one cold read takes (the daemon's, every thread, from /proc, plus the
//            `dd`'s): a second reader at the same CPU per MiB can add at most what the cores
//            left over allow, so the pair's bound is the cores granted over the cores one uses
//   stat     median latency of lstat(2) of fresh names (each one a LOOKUP the kernel never
//            cached), idle and while a cold `dd` of the file runs
//   warm     a second `dd` of the stored file (page cache warm) against the plain file's, and of
//            a file written in the mount (`w.bin`, spilled to a spool file) on the readers' mount
//            and on a third Store's mount whose daemon has FUSE passthrough on (+passthrough):
//            passthrough A/B, same run
// Every access into a mount is a child process (python3, dd); this process only talks to the
// daemons through the SDK.
//   node --import tsx bench/cells/fuse_parallel.ts --cell layerfs-fuse-parallel --tmp SCRATCH --tier quick [--mib 64] [--rounds 3]

import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Client } from '../../lib/sdk/index.js';
import { randomFile } from '../lib/file-ops.js';
import { median } from '../lib/measure.js';
import { fuseAvailable } from '../../lib/fuse/index.js';
import { FEATURES_ENV } from '../../lib/fuse/kernel-features.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';

const OPTIONS = {
  mib: { type: 'string', default: '64' },
  rounds: { type: 'string', default: '3' },
} as const;

/** The measuring child: one JSON line per call (python3 reaches posix_fadvise). */
const PY = String.raw`
import json, os, resource, subprocess, sys, time, statistics
def drop(p):
    fd = os.open(p, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
def dd(p):
    return subprocess.Popen(['dd', 'if=' + p, 'of=/dev/null', 'bs=1M', 'status=none'])
def stats(d, n, tag):
    lat = []
    for i in range(n):
        t = time.perf_counter()
        try:
            os.lstat(os.path.join(d, '.absent-%s-%d' % (tag, i)))
        except FileNotFoundError:
            pass
        lat.append(time.perf_counter() - t)
    return statistics.median(lat) * 1e6
op = sys.argv[1]
if op == 'read':
    for p in sys.argv[2:]: drop(p)
    t = time.perf_counter()
    for c in [dd(p) for p in sys.argv[2:]]: c.wait()
    s = time.perf_counter() - t
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({'s': s, 'cpuS': ru.ru_utime + ru.ru_stime}))
elif op == 'warm':
    for p in sys.argv[2:]: dd(p).wait()
    t = time.perf_counter()
    for p in sys.argv[2:]: dd(p).wait()
    print(json.dumps({'s': time.perf_counter() - t}))
elif op == 'cpu':
    t = time.perf_counter()
    for c in [subprocess.Popen(['sha256sum', p], stdout=subprocess.DEVNULL) for p in sys.argv[2:]]: c.wait()
    print(json.dumps({'s': time.perf_counter() - t}))
elif op == 'stat':
    d, n, f, tag = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    idle = stats(d, n, tag + 'i')
    drop(f)
    c = dd(f)
    time.sleep(0.1)
    busy = stats(d, n, tag + 'b')
    running = c.poll() is None
    c.wait()
    print(json.dumps({'idleUs': idle, 'busyUs': busy, 'overlapped': running}))
`;

function py(...args: string[]): Record<string, number | boolean> {
  const r = spawnSync('python3', ['-c', PY, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) throw new Error(`python3 ${args[0]} exited ${r.status}: ${r.stderr.slice(-1000)}`);
  return JSON.parse(r.stdout.trim()) as Record<string, number | boolean>;
}



interface Served {
  client: Client;
  at: string;
  id: string;
  /** The daemon serving it (its CPU is read from /proc). */
  pid: number;
}

/** CPU seconds of process `pid` so far, every thread (utime + stime from /proc/<pid>/stat). */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 of stat(5), counted from the state (field 3) here.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Mounts `main` of the Store at `store`; its daemon starts with this process's environment and `env`. */
async function mount(store: string, at: string, env: Record<string, string> = {}): Promise<Served> {
  const before = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    const client = Client.connect(store);
    const ws = await client.createWorkspace('main', { at, projection: 'fuse' });
    const daemon = await client.daemonStatus();
    if (!daemon) throw new Error(`no daemon serves ${at}`);
    return { client, at, id: ws.id, pid: daemon.pid };
  } finally {
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Warm reads, median of --rounds: the stored file and a written one, against the plain file. */
function warm(served: Served[], plainA: string, rounds: number) {
  const [readers, , pass] = served;
  const runs = { plain: [] as number[], stored: [] as number[], written: [] as number[], passthrough: [] as number[] };
  for (const m of [readers!, pass!]) spawnSync('dd', [`if=${plainA}`, `of=${path.join(m.at, 'w.bin')}`, 'bs=1M', 'status=none']);
  for (let r = 0; r < rounds; r++) {
    runs.plain.push(py('warm', plainA).s as number);
    runs.stored.push(py('warm', path.join(readers!.at, 'a.bin')).s as number);
    runs.written.push(py('warm', path.join(readers!.at, 'w.bin')).s as number);
    runs.passthrough.push(py('warm', path.join(pass!.at, 'w.bin')).s as number);
  }
  const plain = median(runs.plain);
  return { storedRatio: plain / median(runs.stored), writtenRatio: plain / median(runs.written), passthroughRatio: plain / median(runs.passthrough) };
}

interface Figures {
  coldS: number[];
  /** Cores one cold read kept busy: (the daemon's CPU + the dd's) / its wall time. */
  coldCores: number[];
  pairS: number[];
  idleUs: number[];
  busyUs: number[];
  overlapped: number;
}

function round(m: Served, f: Figures, tag: string, stats: number): void {
  const a = path.join(m.at, 'a.bin');
  const cpu0 = cpuSeconds(m.pid);
  const one = py('read', a);
  f.coldS.push(one.s as number);
  f.coldCores.push((cpuSeconds(m.pid) - cpu0 + (one.cpuS as number)) / (one.s as number));
  f.pairS.push(py('read', a, path.join(m.at, 'b.bin')).s as number);
  const s = py('stat', m.at, String(stats), a, tag);
  f.idleUs.push(s.idleUs as number);
  f.busyUs.push(s.busyUs as number);
  if (s.overlapped) f.overlapped++;
}

/**
 * `granted`: the speedup two CPU-bound processes got over one in the same rounds (the cores this
 * machine gives two of them now, at most 2). A second reader at the same CPU per MiB can raise the
 * combined rate at most to granted / (cores one reader keeps busy), and never past 2×.
 */
function summary(f: Figures, mib: number, plainS: number, granted: number) {
  const cold = median(f.coldS);
  const pair = median(f.pairS);
  const idle = median(f.idleUs);
  const busy = median(f.busyUs);
  const cores = median(f.coldCores);
  return {
    coldMiBps: mib / cold,
    coldRatio: plainS / cold,
    coldCores: cores,
    pairMiBps: (2 * mib) / pair,
    pairSpeedup: (2 * cold) / pair,
    pairBound: Math.min(2, Math.min(2, granted) / cores),
    statIdleUs: idle,
    statBusyUs: busy,
    statRatio: busy / idle,
    statOverlapped: f.overlapped,
  };
}

async function fuseParallel(a: Given<typeof OPTIONS, 'tmp'>): Promise<CellResult> {
  const why = !fuseAvailable().ok ? fuseAvailable().reason : process.getuid?.() !== 0 ? 'needs root (kernel backend)' : undefined;
  if (why) return { skipped: why };
  const mib = Number(a.mib);
  const rounds = Number(a.rounds);
  const src = path.join(a.tmp, 'src');
  fs.mkdirSync(src, { recursive: true });
  randomFile(path.join(src, 'a.bin'), mib);
  randomFile(path.join(src, 'b.bin'), mib);
  const stores = [path.join(a.tmp, 'readers.sqlite'), path.join(a.tmp, 'single.sqlite'), path.join(a.tmp, 'passthrough.sqlite')] as const;
  const init = Client.create(stores[0]);
  const layer = (await init.initLayerStack({ name: 'p', source: src })).layer.id;
  init.forkBranch({ name: 'main', layer });
  init.close();
  fs.copyFileSync(stores[0], stores[1]);
  fs.copyFileSync(stores[0], stores[2]);
  const served: Served[] = [];
  try {
    served.push(await mount(stores[0], path.join(a.tmp, 'w-readers')));
    served.push(await mount(stores[1], path.join(a.tmp, 'w-single'), { LAYERFS_FUSE_READERS: '0' }));
    served.push(await mount(stores[2], path.join(a.tmp, 'w-passthrough'), { [FEATURES_ENV]: '+passthrough' }));
    const figs: Figures[] = served.slice(0, 2).map(() => ({ coldS: [], coldCores: [], pairS: [], idleUs: [], busyUs: [], overlapped: 0 }));
    const plain: number[] = [];
    const plainPair: number[] = [];
    const cpuOne: number[] = [];
    const cpuPair: number[] = [];
    const [pa, pb] = [path.join(src, 'a.bin'), path.join(src, 'b.bin')];
    const load0 = fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    // Warm-up: the reader threads start in the background after a mount.
    for (const m of served) py('read', path.join(m.at, 'a.bin'));
    for (let r = 0; r < rounds; r++) {
      plain.push(py('read', pa).s as number);
      plainPair.push(py('read', pa, pb).s as number);
      // What this machine grants a second CPU-bound process now (files cached): the bound for
      // two readers through one mount, whose serving is CPU work.
      cpuOne.push(py('cpu', pa).s as number);
      cpuPair.push(py('cpu', pa, pb).s as number);
      served.slice(0, 2).forEach((m, i) => round(m, figs[i]!, `${i}-${r}`, 300));
    }
    const warmFigs = warm(served, pa, rounds);
    const plainS = median(plain);
    const load1 = fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
    const bounds = { plainPairSpeedup: (2 * plainS) / median(plainPair), cpuPairSpeedup: (2 * median(cpuOne)) / median(cpuPair) };
    const readers = summary(figs[0]!, mib, plainS, bounds.cpuPairSpeedup);
    const single = summary(figs[1]!, mib, plainS, bounds.cpuPairSpeedup);
    return { ms: median(figs[0]!.coldS) * 1000, mib, rounds, plainMiBps: mib / plainS, readers, single, ...bounds, warm: warmFigs, load: `${load0} → ${load1}` };
  } finally {
    for (const m of served) {
      await m.client.endWorkspace(m.id, { discard: true }).catch(() => {});
      await m.client.stopDaemon({ discard: true }).catch(() => {});
      m.client.close();
    }
  }
}

export const fuseParallelCell = defineCell({
  file: import.meta.url,
  id: 'layerfs-fuse-parallel',
  tool: 'layerfs',
  args: OPTIONS,
  required: ['tmp'],
  run: fuseParallel,
});

runIfMain(import.meta.url, fuseParallelCell);
