// The layerfs side of fuse-real-tree.bench.ts, run by a plain `node` so that the SDK it imports
// (a compiled package) starts the daemon as it ships. Prints one JSON line.
//   [IDLE_S=N] [IDLE_RSYNC_S=N] node fuse-real-tree-driver.mjs SDK_INDEX_JS DIR A SRC rsync|copy
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const [sdk, dir, A, src, mode] = process.argv.slice(2);
const { Client } = await import(sdk);
const store = path.join(dir, 'two.sqlite');
const ws = path.join(dir, 'ws');
const out = { load: [] };
const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
const s = (ms) => Math.round(ms / 10) / 100;
const run = (cmd, argv) =>
  new Promise((resolve, reject) => {
    const t = performance.now();
    const p = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => (code === 0 ? resolve(performance.now() - t) : reject(new Error(`${cmd}: ${err}`))));
  });

// The Store's pages in use (a read-only connection sees the WAL too): what a commit's way of
// storing content costs on disk, read after the import and after the commit.
const Database = createRequire(sdk)('better-sqlite3');
const storeBytes = () => {
  const db = new Database(store, { readonly: true });
  try {
    return (db.pragma('page_count', { simple: true }) - db.pragma('freelist_count', { simple: true })) * db.pragma('page_size', { simple: true });
  } finally {
    db.close();
  }
};

const c = Client.create(store);
let t = performance.now();
const init = await c.initLayerStack({ name: 'real', source: path.resolve(A) });
out.importS = s(performance.now() - t);
out.storeBytesAfterImport = storeBytes();
c.forkBranch({ name: 'next', layer: init.layer.id });
const w = await c.createWorkspace('next', { at: ws, projection: 'fuse' });
const pid = (await c.daemonStatus()).pid;

// The daemon's memory, every second: the highest VmRSS per step.
const mem = (k) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
// The daemon's CPU (user + system, every thread) from /proc/<pid>/stat, in seconds.
const cpuS = () => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};
let step = 'mounted';
const peak = {};
const sample = () => {
  try {
    const rss = mem('VmRSS');
    peak[step] = Math.max(peak[step] ?? 0, Math.round(rss));
  } catch {
    /* the daemon is gone */
  }
};
const timer = setInterval(sample, 1000);
// The daemon's VmRSS every 5 s while the mount stays idle for `seconds`.
async function idleRss(seconds) {
  const rss = [];
  for (let k = 5; k <= seconds; k += 5) {
    await new Promise((r) => setTimeout(r, 5000));
    rss.push(Math.round(mem('VmRSS')));
  }
  return rss;
}
sample();

// LOOKUPs of fresh names (never cached): how long metadata requests wait.
let probing = false;
let seq = 0;
async function probe(lat) {
  while (probing) {
    const t0 = performance.now();
    await fs.promises.stat(path.join(ws, `.probe-${process.pid}-${seq++}`)).catch(() => {});
    lat.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const summary = (lat) => {
  const a = [...lat].sort((x, y) => x - y);
  return { n: a.length, medianMs: Math.round(a[a.length >> 1] * 10) / 10, p99Ms: Math.round(a[Math.floor(a.length * 0.99)] * 10) / 10, maxMs: Math.round(a[a.length - 1]) };
};
const idle = [];
probing = true;
const idleDone = probe(idle);
await new Promise((r) => setTimeout(r, 2000));
probing = false;
await idleDone;
out.statIdle = summary(idle);

step = 'rsync';
out.load.push(load());
out.rsyncS = s(mode === 'rsync' ? await run('rsync', ['-a', '--delete', `${path.resolve(src)}/`, `${ws}/`]) : await run('cp', ['-r', `${path.resolve(src)}/.`, `${ws}/`]));
sample();
out.hwmAfterRsync = Math.round(mem('VmHWM'));
// With IDLE_RSYNC_S: the mount stays idle that long after the rsync, the daemon's VmRSS read
// every 5 s (what a daemon holds while a large change waits uncommitted).
const idleRsyncS = Number(process.env.IDLE_RSYNC_S ?? 0);
if (idleRsyncS > 0) out.rssIdleAfterRsync = await idleRss(idleRsyncS);
step = 'commit';
out.load.push(load());
const during = [];
probing = true;
const probed = probe(during);
t = performance.now();
const cpu0 = cpuS();
const commit = await c.commitWorkspace(w.id, { message: 'B' });
out.commitS = s(performance.now() - t);
out.commitCpuS = Math.round((cpuS() - cpu0) * 100) / 100;
probing = false;
await probed;
sample();
out.statDuringCommit = summary(during);
out.load.push(load());
if (commit.outcome !== 'Created') throw new Error(`commit: ${commit.outcome}`);
out.objectsInserted = commit.objectsInserted;
out.bytesInserted = commit.bytesInserted;
out.storeBytesAfterCommit = storeBytes();
out.hwmAfterCommit = Math.round(mem('VmHWM'));
const rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
out.smaps = Object.fromEntries(['Rss', 'Anonymous', 'Shared_Clean', 'Private_Dirty'].map((k) => [k, Math.round(Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(rollup)[1]) / 1024)]));
// With an idle time (IDLE_S seconds): the resident set the idle daemon settles to after the
// commit, sampled every 5 s (what a long-lived daemon holds after a large commit).
const idleS = Number(process.env.IDLE_S ?? 0);
if (idleS > 0) out.rssIdle = await idleRss(idleS);
clearInterval(timer);
out.peakRss = peak;
t = performance.now();
await c.endWorkspace(w.id);
out.endS = s(performance.now() - t);
await c.stopDaemon({ discard: true });
c.close();
console.log(JSON.stringify(out));
