/**
 * A serving thread polls /dev/fuse for a while before it blocks in read(2) (native/request_pool.h),
 * while the machine has an idle CPU. There most of a FUSE round trip is waking a sleeping thread
 * on an idle CPU, and a request that comes within the poll is read at once: a round trip of
 * 76–100 µs took 22–30 µs, and an untar of 7,437 files ran 1.8× as fast (docs/BENCHMARKS.md). On a
 * busy machine the poll takes CPU the writer and everything else need (that untar was 20 % slower
 * beside three busy loops), so every 250 ms the gate reads /proc/stat and polls only while at
 * least half a CPU was idle, the polling itself counted as idle. `LAYERFS_FUSE_SPIN_US` sets the
 * poll (default 50 µs; 0 never polls); one CPU never polls.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fuseSpin, fuseSpinStats } from '../native/fd.js';

const DEFAULT_SPIN_US = 50;
const WINDOW_MS = 250;
/** /proc/stat counts in USER_HZ ticks: 100 a second on Linux. */
const TICK_NS = 10_000_000;

/** CPUs that must have been idle over the last window for the serving threads to poll. */
export function idleNeeded(): number {
  const v = Number(process.env.LAYERFS_FUSE_SPIN_IDLE);
  return process.env.LAYERFS_FUSE_SPIN_IDLE !== undefined && Number.isFinite(v) && v >= 0 ? v : 0.5;
}

/** The poll, ns: LAYERFS_FUSE_SPIN_US (at most 10 ms), else 50 µs; 0 on one CPU. */
export function spinSetting(cpus = availableParallelism()): number {
  const env = process.env.LAYERFS_FUSE_SPIN_US;
  const us = env !== undefined && /^\d+$/.test(env) ? Math.min(10_000, Number(env)) : DEFAULT_SPIN_US;
  return cpus < 2 ? 0 : us * 1000;
}

/** The machine's CPU time so far, in ticks: idle (with iowait) and in all. */
export interface CpuTimes {
  idle: number;
  total: number;
}

/** The `cpu` line of /proc/stat (user nice system idle iowait irq softirq steal …), or null. */
export function parseCpuTimes(stat: string): CpuTimes | null {
  const end = stat.indexOf('\n');
  const f = (end < 0 ? stat : stat.slice(0, end)).trim().split(/\s+/);
  if (f[0] !== 'cpu' || f.length < 9) return null;
  const n = f.slice(1, 9).map(Number);
  if (n.some((x) => !Number.isFinite(x) || x < 0)) return null;
  return { idle: n[3]! + n[4]!, total: n.reduce((a, b) => a + b, 0) };
}

/** CPUs idle on average between two readings, `spunNs` of polling counted as idle. */
export function idleCpus(prev: CpuTimes, cur: CpuTimes, spunNs: number, cpus: number): number {
  const total = cur.total - prev.total;
  if (total <= 0) return cpus; // not a tick went by: nothing ran
  return Math.max(0, Math.min(cpus, ((cur.idle - prev.idle + spunNs / TICK_NS) / total) * cpus));
}

/** One serving thread's gate: tick() after each request; it sets the process-wide poll. */
export class SpinGate {
  private at = -Infinity;
  private last: CpuTimes | null = null;
  private spun = 0;

  constructor(
    private readonly spinNs = spinSetting(),
    private readonly cpus = availableParallelism(),
    private readonly needed = idleNeeded(),
    private readonly readStat: () => string = () => readFileSync('/proc/stat', 'latin1'),
  ) {}

  tick(now = performance.now()): void {
    if (this.spinNs === 0 || now - this.at < WINDOW_MS) return;
    this.at = now;
    let cur: CpuTimes | null = null;
    try {
      cur = parseCpuTimes(this.readStat());
    } catch {
      cur = null; // no /proc: never poll
    }
    const spun = fuseSpinStats().spunNs;
    const on = this.needed === 0 || (cur !== null && this.last !== null && idleCpus(this.last, cur, spun - this.spun, this.cpus) >= this.needed);
    this.last = cur;
    this.spun = spun;
    fuseSpin(on ? this.spinNs : 0);
  }
}
