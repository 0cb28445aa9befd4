/**
 * Cgroups of Sandboxes: one cgroup per Sandbox carries its limits, and each execution gets a
 * leaf under it, so its own use (peak memory, CPU time, PIDs, OOM kills) can be read apart
 * from the others' while the Sandbox's limits bound them all together.
 *
 * Both hierarchies are supported and detected from /proc/self/mountinfo: cgroup v2 (one tree,
 * controllers memory, pids and cpu) and v1 (a tree per controller: memory, pids, cpu, cpuacct).
 * A v1 controller that is not mounted is mounted by root under /sys/fs/cgroup; anything else
 * missing is ERR_SANDBOX_UNAVAILABLE naming it, because a Sandbox never runs unlimited.
 *
 * Layout: <tree>/layerfs/<sandbox id>/<execution id>; <tree> is the controller's v1 mount, or
 * the v2 mount for root and the parent of this process's own (delegated) cgroup otherwise.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LayerFsError } from '../errors.js';

const V1_CONTROLLERS = ['memory', 'pids', 'cpu', 'cpuacct'] as const;
const V2_CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
type V1Controller = (typeof V1_CONTROLLERS)[number];

/** A cgroup in every hierarchy it lives in: one directory on v2, one per controller on v1. */
export interface CgroupSet {
  version: 1 | 2;
  /** v2: [dir]; v1: memory, pids, cpu, cpuacct, in that order (the same dir may repeat when co-mounted). */
  dirs: string[];
}

export interface CgroupLimits {
  memoryMib: number | null;
  cpus: number | null;
  pidsLimit: number | null;
}

export interface ResourceUsage {
  /** Highest memory use of the execution's cgroup, bytes (null where the kernel does not say). */
  peakMemoryBytes: number | null;
  /** CPU time of all its processes, user plus system, ms. */
  cpuMs: number | null;
  /** Highest number of processes at once (null where the kernel does not say). */
  peakPids: number | null;
  /** How often a fork was refused by the PID limit. */
  pidsLimitHits: number;
  /** Processes killed by the out-of-memory killer. */
  oomKills: number;
}

function unavailable(message: string, missing: string, hint: string, errno?: string): LayerFsError {
  return new LayerFsError('ERR_SANDBOX_UNAVAILABLE', `${message}; missing: ${missing}`, { missing, hint, ...(errno ? { errno } : {}) });
}

interface Mount {
  point: string;
  fstype: string;
  options: string[];
}

function cgroupMounts(): Mount[] {
  const out: Mount[] = [];
  let text = '';
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const point = line.slice(0, sep).split(' ')[4]?.replace(/\\040/g, ' ');
    const [fstype, , superOpts] = line.slice(sep + 3).split(' ');
    if (point && (fstype === 'cgroup' || fstype === 'cgroup2')) out.push({ point, fstype, options: (superOpts ?? '').split(',') });
  }
  return out;
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** This process's cgroup on v2 ("0::/path"), relative to the v2 mount. */
function ownV2Path(): string {
  const line = (readText('/proc/self/cgroup') ?? '').split('\n').find((l) => l.startsWith('0::'));
  return line ? line.slice(3) : '/';
}

function isRoot(): boolean {
  return typeof process.geteuid === 'function' && process.geteuid() === 0;
}

/** Mounts a missing v1 controller (root only), so a hybrid machine without it still works. */
function mountV1(controller: V1Controller): string | null {
  if (!isRoot()) return null;
  const point = `/sys/fs/cgroup/${controller}`;
  try {
    mkdirSync(point, { recursive: true });
  } catch {
    return null;
  }
  const r = spawnSync('mount', ['-t', 'cgroup', '-o', controller, 'cgroup', point], { stdio: 'ignore' });
  return r.status === 0 ? point : null;
}

function writable(dir: string): string | null {
  try {
    accessSync(dir, constants.W_OK);
    return null;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? 'EACCES';
  }
}

/** The directory under which layerfs keeps its cgroups, in every hierarchy it needs. */
export function cgroupBase(): CgroupSet {
  const mounts = cgroupMounts();
  const v2 = mounts.find((m) => m.fstype === 'cgroup2');
  const v2Controllers = v2 ? (readText(join(v2.point, 'cgroup.controllers')) ?? '').trim().split(/\s+/) : [];
  const v1 = mounts.filter((m) => m.fstype === 'cgroup');
  if (v2 && V2_CONTROLLERS.every((c) => v2Controllers.includes(c)) && !v1.some((m) => m.options.includes('memory'))) {
    const tree = isRoot() ? v2.point : dirname(join(v2.point, ownV2Path()));
    const err = writable(tree);
    if (err) throw unavailable(`cannot create cgroups in ${tree} (${err})`, `a writable cgroup v2 subtree (${tree})`, 'run as root, or in a session whose cgroup is delegated to you (systemd-run --user --scope -p Delegate=yes)', err);
    return { version: 2, dirs: [join(tree, 'layerfs')] };
  }
  const dirs: string[] = [];
  for (const c of V1_CONTROLLERS) {
    const m = v1.find((x) => x.options.includes(c));
    const point = m?.point ?? mountV1(c);
    if (point === null) {
      throw unavailable(`the cgroup ${c} controller is not mounted`, `cgroup controller ${c}`, v1.length || v2 ? `mount it (mount -t cgroup -o ${c} cgroup /sys/fs/cgroup/${c}) as root` : 'mount cgroups under /sys/fs/cgroup');
    }
    const base = join(point, 'layerfs');
    const err = writable(existsSync(base) ? base : point);
    if (err) {
      throw unavailable(`cannot create a cgroup in ${point} (${err})`, `a writable cgroup v1 ${c} hierarchy (${point})`, 'on cgroup v1 only root can create cgroups: run as root, or use a cgroup v2 machine with a delegated cgroup', err);
    }
    dirs.push(base);
  }
  return { version: 1, dirs };
}

export function childSet(set: CgroupSet, name: string): CgroupSet {
  return { version: set.version, dirs: set.dirs.map((d) => join(d, name)) };
}

function writeKnob(dir: string, knob: string, value: string, optional = false): void {
  try {
    writeFileSync(join(dir, knob), value);
  } catch (e) {
    if (optional) return;
    const errno = (e as NodeJS.ErrnoException).code;
    throw unavailable(`cannot set ${knob} in ${dir} (${errno})`, `cgroup file ${join(dir, knob)}`, 'check that this cgroup controller is usable here', errno);
  }
}

function makeDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (e) {
    const errno = (e as NodeJS.ErrnoException).code;
    throw unavailable(`cannot create cgroup ${dir} (${errno})`, `cgroup ${dir}`, 'run as root, or use a delegated cgroup v2 subtree', errno);
  }
}

/** v2 controllers only reach a child when every ancestor enables them in cgroup.subtree_control. */
function enableV2(dir: string, upTo: string): void {
  const chain: string[] = [];
  for (let d = dir; d.length >= upTo.length; d = dirname(d)) {
    chain.unshift(d);
    if (d === upTo) break;
  }
  for (const d of chain) {
    const have = (readText(join(d, 'cgroup.subtree_control')) ?? '').trim().split(/\s+/);
    const want = V2_CONTROLLERS.filter((c) => !have.includes(c));
    if (want.length) writeKnob(d, 'cgroup.subtree_control', want.map((c) => `+${c}`).join(' '));
  }
}

/** Creates (or updates) a Sandbox's cgroup with its limits. */
export function applySandboxCgroup(base: CgroupSet, set: CgroupSet, limits: CgroupLimits): void {
  for (const d of set.dirs) makeDir(d);
  const mem = limits.memoryMib === null ? null : String(limits.memoryMib * 1024 * 1024);
  const period = 100_000;
  const quota = limits.cpus === null ? null : String(Math.max(1000, Math.round(limits.cpus * period)));
  const pids = limits.pidsLimit === null ? 'max' : String(limits.pidsLimit);
  if (set.version === 2) {
    const d = set.dirs[0]!;
    enableV2(d, dirname(base.dirs[0]!));
    writeKnob(d, 'memory.max', mem ?? 'max');
    writeKnob(d, 'memory.swap.max', mem === null ? 'max' : '0', true);
    writeKnob(d, 'pids.max', pids);
    writeKnob(d, 'cpu.max', `${quota ?? 'max'} ${period}`);
    return;
  }
  const [memory, pidsDir, cpu] = set.dirs as [string, string, string, string];
  // memsw must stay >= the memory limit, so lower order depends on direction: raise memsw first.
  writeKnob(memory, 'memory.memsw.limit_in_bytes', '-1', true);
  writeKnob(memory, 'memory.limit_in_bytes', mem ?? '-1');
  if (mem !== null) writeKnob(memory, 'memory.memsw.limit_in_bytes', mem, true);
  writeKnob(pidsDir, 'pids.max', pids);
  writeKnob(cpu, 'cpu.cfs_period_us', String(period));
  writeKnob(cpu, 'cpu.cfs_quota_us', quota ?? '-1');
}

/** The set's directory of the pids controller (v2: its one directory). */
function pidsDir(set: CgroupSet): string {
  return set.dirs[set.version === 2 ? 0 : 1]!;
}

/** An execution's leaf under its Sandbox's cgroup. */
export function createLeaf(sandbox: CgroupSet, name: string): CgroupSet {
  const leaf = childSet(sandbox, name);
  if (leaf.version === 2) enableV2(sandbox.dirs[0]!, sandbox.dirs[0]!);
  for (const d of leaf.dirs) makeDir(d);
  // The kernel raises a cgroup's pids.peak before it checks its ancestors' pids.max, so forks
  // racing past the Sandbox's limit (and refused there) could still lift an unlimited leaf's peak
  // above it; the same limit on the leaf keeps the peak a receipt reports within the limit.
  const max = readText(join(pidsDir(sandbox), 'pids.max'));
  if (max !== null) writeKnob(pidsDir(leaf), 'pids.max', max.trim());
  return leaf;
}

/** The files a process writes its pid to, to join the set (deduplicated for co-mounted v1 controllers). */
export function procsFiles(set: CgroupSet): string[] {
  return [...new Set(set.dirs)].map((d) => join(d, 'cgroup.procs'));
}

function num(text: string | null): number | null {
  if (text === null) return null;
  const n = Number(text.trim());
  return Number.isFinite(n) ? n : null;
}

function keyed(text: string | null, key: string): number | null {
  if (text === null) return null;
  const line = text.split('\n').find((l) => l.startsWith(`${key} `));
  return line ? num(line.slice(key.length + 1)) : null;
}

export function readUsage(set: CgroupSet): ResourceUsage {
  if (set.version === 2) {
    const d = set.dirs[0]!;
    const usec = keyed(readText(join(d, 'cpu.stat')), 'usage_usec');
    return {
      peakMemoryBytes: num(readText(join(d, 'memory.peak'))),
      cpuMs: usec === null ? null : usec / 1000,
      peakPids: num(readText(join(d, 'pids.peak'))),
      pidsLimitHits: keyed(readText(join(d, 'pids.events')), 'max') ?? 0,
      oomKills: keyed(readText(join(d, 'memory.events')), 'oom_kill') ?? 0,
    };
  }
  const [memory, pids, , cpuacct] = set.dirs as [string, string, string, string];
  const ns = num(readText(join(cpuacct, 'cpuacct.usage')));
  return {
    peakMemoryBytes: num(readText(join(memory, 'memory.max_usage_in_bytes'))),
    cpuMs: ns === null ? null : ns / 1e6,
    peakPids: num(readText(join(pids, 'pids.peak'))),
    pidsLimitHits: keyed(readText(join(pids, 'pids.events')), 'max') ?? 0,
    oomKills: keyed(readText(join(memory, 'memory.oom_control')), 'oom_kill') ?? 0,
  };
}

/** What the Sandbox's cgroup holds now; null when it does not exist (stopped, or after a reboot). */
export function currentUse(set: CgroupSet): { memoryBytes: number | null; pids: number | null; cpuMs: number | null } | null {
  if (!existsSync(set.dirs[0]!)) return null;
  if (set.version === 2) {
    const d = set.dirs[0]!;
    const usec = keyed(readText(join(d, 'cpu.stat')), 'usage_usec');
    return { memoryBytes: num(readText(join(d, 'memory.current'))), pids: num(readText(join(d, 'pids.current'))), cpuMs: usec === null ? null : usec / 1000 };
  }
  const [memory, pids, , cpuacct] = set.dirs as [string, string, string, string];
  const ns = num(readText(join(cpuacct, 'cpuacct.usage')));
  return { memoryBytes: num(readText(join(memory, 'memory.usage_in_bytes'))), pids: num(readText(join(pids, 'pids.current'))), cpuMs: ns === null ? null : ns / 1e6 };
}

function subdirs(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(dir, e.name));
  } catch {
    return [];
  }
}

function pidsIn(dir: string): number[] {
  const own = (readText(join(dir, 'cgroup.procs')) ?? '').split('\n').filter(Boolean).map(Number);
  return own.concat(...subdirs(dir).map(pidsIn));
}

/** SIGKILLs every process in the set (and its children cgroups); resolves once they are gone. */
export async function killAll(set: CgroupSet, timeoutMs = 5000): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  let killed = 0;
  for (;;) {
    const pids = [...new Set(set.dirs.flatMap(pidsIn))];
    if (pids.length === 0) return killed;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // gone already
      }
    }
    if (performance.now() > deadline) return killed;
    await sleep(20);
  }
}

/**
 * Kills what an execution left in its leaf and waits until its tasks no longer hold the
 * Sandbox's PID limit: a fork bomb's tasks stay charged for a moment after its command exits,
 * and forks of the next execution failed meanwhile. One charge may stay: one task of every
 * execution stays charged up to ~1.5 s after it ends (seen even after `true`, with no process
 * left in the cgroup), too long to wait for each time, and one task does not take the limit.
 * Gives up after `timeoutMs`. `pids.current` counts exited tasks too until the kernel releases them.
 */
export async function drainSet(set: CgroupSet, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  await killAll(set, timeoutMs);
  for (;;) {
    const charged = num(readText(join(pidsDir(set), 'pids.current')));
    if (charged === null || charged <= 1 || performance.now() > deadline) return;
    await sleep(5);
  }
}

/** Removes an empty cgroup set, children first; a cgroup still emptying gets a few retries. */
export async function removeSet(set: CgroupSet): Promise<void> {
  for (const d of [...new Set(set.dirs)]) {
    for (const c of subdirs(d)) await removeSet({ version: set.version, dirs: [c] });
    for (let attempt = 0; ; attempt++) {
      try {
        rmdirSync(d);
        break;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') break;
        if (code !== 'EBUSY' || attempt >= 50) throw new LayerFsError('ERR_BUSY', `cannot remove cgroup ${d} (${code})`, { path: d, errno: code, hint: 'processes are still in it' });
        await sleep(20);
      }
    }
  }
}
