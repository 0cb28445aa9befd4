// The real-tree fixture's B over A in a FUSE Workspace, the daemon compiled (as it ships), with
// git add+commit of the same change in the same run. Per package given (--pkg DIR: a compiled
// package root, or `this`: this checkout compiled with esbuild, lib/ as JavaScript, its addon under build/; repeat --pkg to alternate two codes),
// a plain `node` (no TypeScript loader) drives the package's SDK: import release A, a FUSE
// Workspace of it, `rsync -a --delete B/ ws/`, the commit. The daemon's VmRSS and VmHWM are read
// from /proc/<pid>/status every second (the highest per step is reported), its smaps_rollup at
// the end of the commit, and during the commit a LOOKUP of a fresh name (`stat` of a missing
// path, never cached) every 20 ms measures how long metadata requests wait behind the commit
// (the same probe on the idle mount first); "storeBytesAfterImport" and "storeBytesAfterCommit"
// are the Store's pages in use after each, what a change to how a commit stores content costs on
// disk. `--files N` writes N generated files (64 B–12 KiB)
// with `cp -r` into a fresh Workspace instead of the rsync of release B.
//   node --import tsx bench/micro/fuse-real-tree.bench.ts --tmp DIR --pkg DIR|this [--pkg DIR|this] [--a DIR --b DIR] [--files N] [--git] [--rounds N] [--node-options STR] [--idle S] [--idle-rsync S]  → JSON lines
// --idle S: after the commit the mount stays idle S seconds, the daemon's VmRSS read every 5 s ("rssIdle").
// --idle-rsync S: the same after the rsync, before the commit ("rssIdleAfterRsync").
// --node-options: NODE_OPTIONS of the driver and so of the daemon it starts (e.g. `--perf-basic-prof`,
// for `perf record -g -p <daemon pid>` to name JavaScript frames); "commitCpuS" is the daemon's CPU
// (user + system, every thread) during the commit.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { GIT as git, gitEnv } from '../lib/git.js';

function args(name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < process.argv.length; i++) if (process.argv[i] === name && i + 1 < process.argv.length) out.push(process.argv[i + 1]!);
  return out;
}
const arg = (name: string, dflt?: string) => args(name)[0] ?? dflt;

const tmp = path.resolve(arg('--tmp') ?? '');
if (!arg('--tmp')) throw new Error('--tmp DIR: a scratch directory');
fs.mkdirSync(tmp, { recursive: true });
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkgs = args('--pkg').map((p) => (p === 'this' ? compiledPackage() : path.resolve(p)));
if (pkgs.length === 0) throw new Error('--pkg DIR: a compiled package root (lib/ as JavaScript, build/ with the addon)');
function sourcesOf(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourcesOf(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** This checkout as it ships (lib compiled to JavaScript by esbuild, file by file), its addon and dependencies linked. */
function compiledPackage(): string {
  const pkg = path.join(tmp, 'pkg-this');
  fs.rmSync(pkg, { recursive: true, force: true });
  buildSync({ entryPoints: sourcesOf(path.join(repo, 'lib')), outdir: path.join(pkg, 'lib'), outbase: path.join(repo, 'lib'), format: 'esm', platform: 'node', target: 'node20', logLevel: 'error' });
  fs.writeFileSync(path.join(pkg, 'package.json'), fs.readFileSync(path.join(repo, 'package.json')));
  fs.symlinkSync(path.join(repo, 'build'), path.join(pkg, 'build'));
  fs.symlinkSync(path.join(repo, 'node_modules'), path.join(pkg, 'node_modules'));
  return pkg;
}

const cache = '/root/.cache/layerfs-bench';
const fixture = (r: string) => {
  const d = fs.readdirSync(cache).find((n) => n.startsWith(`real-tree-${r}-`));
  return d ? path.join(cache, d, 'tree') : '';
};
const files = Number(arg('--files', '0'));
/** With --files the base is a one-file tree: the commit holds the generated files only. */
function emptyBase(): string {
  const d = path.join(tmp, 'base-one-file');
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'README'), 'base\n');
  return d;
}
const A = files > 0 ? emptyBase() : path.resolve(arg('--a') ?? fixture('a'));
const B = path.resolve(arg('--b') ?? fixture('b'));
const rounds = Number(arg('--rounds', '1'));
const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const sh = (cmd: string, opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}) => {
  const t = performance.now();
  const r = spawnSync('sh', ['-c', cmd], { encoding: 'utf8', maxBuffer: 1 << 26, ...opts });
  if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  return (performance.now() - t) / 1000;
};
const r2 = (x: number) => Math.round(x * 100) / 100;

/** A generated tree of `n` files of 64 B–12 KiB in directories of 100. */
function generated(n: number): string {
  const dir = path.join(tmp, `gen-${n}`);
  if (fs.existsSync(dir)) return dir;
  for (let i = 0; i < n; i++) {
    const d = path.join(dir, `d${Math.floor(i / 100)}`);
    if (i % 100 === 0) fs.mkdirSync(d, { recursive: true });
    const size = 64 + ((i * 7919) % 12224);
    const b = Buffer.alloc(size);
    for (let j = 0; j < size; j += 4) b.writeUInt32LE((i * 2654435761 + j * 40503) >>> 0, Math.min(j, size - 4));
    fs.writeFileSync(path.join(d, `f${i}.txt`), b);
  }
  return dir;
}

const nodeOptions = arg('--node-options');
const driver = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fuse-real-tree-driver.mjs');

function layerfsRun(pkg: string, round: number): Record<string, unknown> {
  const dir = path.join(tmp, `run-${round}-${path.basename(pkg)}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  if (arg('--idle')) env.IDLE_S = arg('--idle');
  if (arg('--idle-rsync')) env.IDLE_RSYNC_S = arg('--idle-rsync');
  if (nodeOptions) env.NODE_OPTIONS = nodeOptions;
  const src = files > 0 ? generated(files) : B;
  const r = spawnSync(process.execPath, [driver, path.join(pkg, 'lib/sdk/index.js'), dir, A, src, files > 0 ? 'copy' : 'rsync'], { env, encoding: 'utf8', maxBuffer: 1 << 26 });
  spawnSync('sh', ['-c', `grep -q ' ${dir}/ws ' /proc/mounts && umount -l '${dir}/ws'`]);
  // The daemon's log stays (LAYERFS_DAEMON_MEMORY=1 makes it note the commit's memory).
  const log = path.join(dir, 'two.sqlite.d', 'daemon.log');
  if (fs.existsSync(log)) fs.copyFileSync(log, path.join(tmp, `daemon-${round}-${path.basename(pkg)}.log`));
  if (r.status !== 0) throw new Error(`driver (${pkg}) failed: ${r.stderr}`);
  fs.rmSync(dir, { recursive: true, force: true });
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

function gitRun(round: number): Record<string, unknown> {
  const dir = path.join(tmp, `git-${round}`);
  fs.rmSync(dir, { recursive: true, force: true });
  const work = path.join(dir, 'work');
  fs.mkdirSync(work, { recursive: true });
  const env = gitEnv(path.join(dir, 'repo.git'), work);
  const out: Record<string, unknown> = { tool: 'git', loadBefore: load() };
  if (files > 0) {
    sh(`${git} init -q && ${git} commit -q --allow-empty -m A`, { env, cwd: work });
    out.copyS = r2(sh(`cp -r '${generated(files)}/.' '${work}/'`));
  } else {
    sh(`cp -a '${A}/.' '${work}/'`);
    out.importS = r2(sh(`${git} init -q && ${git} add -A && ${git} commit -q -m A`, { env, cwd: work }));
    out.rsyncS = r2(sh(`rsync -a --delete --exclude=/.git '${B}/' '${work}/'`));
  }
  out.commitS = r2(sh(`${git} add -A && ${git} commit -q -m B`, { env, cwd: work }));
  out.loadAfter = load();
  fs.rmSync(dir, { recursive: true, force: true });
  return out;
}

for (let round = 0; round < rounds; round++) {
  // The order alternates per round: git, then the packages in turn (reversed on odd rounds).
  const order = round % 2 === 0 ? pkgs : [...pkgs].reverse();
  if (process.argv.includes('--git')) console.log(JSON.stringify({ round, ...gitRun(round) }));
  for (const pkg of order) console.log(JSON.stringify({ round, pkg, ...layerfsRun(pkg, round) }));
}
