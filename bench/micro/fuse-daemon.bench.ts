// The mount daemon's memory, write throughput and large-file commit, two daemons in the same
// run: the code of another checkout (--before DIR, its addon built) and this one, each with its
// own Store holding the same random --mib MiB file, the daemons' order alternating per round.
// Per round and daemon: a cold read of the stored file (its pages dropped with
// posix_fadvise(DONTNEED) first; the Store file's pages stay cached), a sequential write of a
// --write MiB file (`dd bs=1M` from a random file in the page cache, new each round, close included; the same dd
// into a plain directory of the same file system first, in the same round), the commit of it
// (new content), then `rm`, commit, the same write again and its commit (content already stored:
// chunking and hashing only), each commit's SDK wall time and the daemon's CPU over it
// (/proc/<pid>/stat); at the end each daemon's VmHWM. Needs root (kernel backend) and /dev/fuse.
// --before-env / --after-env K=V,K=V: environment of that side's daemon only (with --before ., an
// A/B of two settings of this checkout).
//   node --import tsx bench/micro/fuse-daemon.bench.ts --tmp DIR --before DIR [--mib 256] [--write 1024] [--rounds 3] [--before-env K=V] [--after-env K=V]  → JSON lines
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { twinStores } from '../lib/twin-stores.js';
import { arg, clientOf, scratchAndBefore, sh, sideEnv, withEnv } from '../lib/micro-ab.js';

const { tmp, before } = scratchAndBefore();
const mib = Number(arg('--mib', '256'));
const writeMib = Number(arg('--write', '1024'));
const rounds = Number(arg('--rounds', '3'));
const BeforeClient = await clientOf(before);

const DROP = String.raw`import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)`;
function timed(fn: () => void): number {
  const t = performance.now();
  fn();
  return (performance.now() - t) / 1000;
}
function coldRead(file: string): number {
  spawnSync('python3', ['-c', DROP, file]);
  return timed(() => sh(`dd if='${file}' of=/dev/null bs=1M status=none`));
}
/** dd of the cached random file to `to`, close included. */
const write = (to: string) => timed(() => sh(`dd if='${path.join(tmp, 'w.src')}' of='${to}' bs=1M status=none`));
function cpuOf(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}
const hwmOf = (pid: number) => Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const r2 = (x: number) => Math.round(x * 100) / 100;

interface Side {
  tag: string;
  client: Client;
  at: string;
  id: string;
  pid: number;
  figs: Record<string, number[]>;
}

async function commit(s: Side): Promise<{ s: number; cpu: number }> {
  const c0 = cpuOf(s.pid);
  const t = performance.now();
  const c = await s.client.commitWorkspace(s.id);
  if (c.outcome !== 'Created') throw new Error(`${s.tag}: commit ${c.outcome}`);
  return { s: (performance.now() - t) / 1000, cpu: cpuOf(s.pid) - c0 };
}

const src = path.join(tmp, 'src');
fs.mkdirSync(src, { recursive: true });
sh(`head -c ${mib * 1048576} /dev/urandom > '${src}/a.bin'; head -c ${writeMib * 1048576} /dev/urandom > '${tmp}/w.src'; cat '${tmp}/w.src' > /dev/null`);
const stores = await twinStores(tmp, src);
const plainDir = path.join(tmp, 'plain');
fs.mkdirSync(plainDir);
const sides: Side[] = [];
try {
  for (const [store, tag, C] of [
    [stores[0]!, 'before', BeforeClient],
    [stores[1]!, 'after', Client],
  ] as const) {
    const client = C.connect(store);
    const at = path.join(tmp, `w-${tag}`);
    const ws = await withEnv(sideEnv(tag), () => client.createWorkspace('main', { at, projection: 'fuse' }));
    sides.push({ tag, client, at, id: ws.id, pid: (await client.daemonStatus())!.pid, figs: {} });
  }
  for (const s of sides) coldRead(path.join(s.at, 'a.bin'));
  const push = (s: Side, k: string, v: number) => (s.figs[k] ??= []).push(v);
  for (let r = 0; r < rounds; r++) {
    // New random content each round: every round's first commit stores new content.
    if (r > 0) sh(`head -c ${writeMib * 1048576} /dev/urandom > '${tmp}/w.src'; cat '${tmp}/w.src' > /dev/null`);
    const line: Record<string, unknown> = { round: r, load: load() };
    for (const s of r % 2 ? [...sides].reverse() : sides) {
      const plain = coldRead(path.join(src, 'a.bin'));
      const cold = coldRead(path.join(s.at, 'a.bin'));
      push(s, 'coldTimesPlain', plain / cold);
      push(s, 'coldMiBps', mib / cold);
      fs.rmSync(path.join(plainDir, 'w.bin'), { force: true });
      const plainW = write(path.join(plainDir, 'w.bin'));
      const w = write(path.join(s.at, 'w.bin'));
      push(s, 'writeMiBps', writeMib / w);
      push(s, 'writeTimesPlain', plainW / w);
      const fresh = await commit(s);
      push(s, 'newCommitS', fresh.s);
      push(s, 'newCommitCpu', fresh.cpu);
      fs.rmSync(path.join(s.at, 'w.bin'));
      await commit(s);
      write(path.join(s.at, 'w.bin'));
      const again = await commit(s);
      push(s, 'storedCommitS', again.s);
      push(s, 'storedCommitCpu', again.cpu);
      fs.rmSync(path.join(s.at, 'w.bin'));
      await commit(s);
      line[s.tag] = { coldMiBps: Math.round(mib / cold), plainWriteMiBps: Math.round(writeMib / plainW), writeMiBps: Math.round(writeMib / w), newCommit: [r2(fresh.s), r2(fresh.cpu)], storedCommit: [r2(again.s), r2(again.cpu)], hwmMiB: Math.round(hwmOf(s.pid)) };
    }
    line.loadAfter = load();
    console.log(JSON.stringify(line));
  }
  for (const s of sides) {
    console.log(JSON.stringify({ side: s.tag, daemonVmHWMMiB: Math.round(hwmOf(s.pid)), ...Object.fromEntries(Object.entries(s.figs).map(([k, v]) => [k, { median: r2(median(v)), each: v.map(r2) }])) }));
  }
} finally {
  for (const s of sides) {
    await s.client.endWorkspace(s.id, { discard: true }).catch(() => {});
    await s.client.stopDaemon({ discard: true }).catch(() => {});
    s.client.close();
  }
}
