/**
 * The disk cap of a Sandbox (--disk-mib): while a sandboxed command runs, its owner measures the
 * Workspace's disk use (du of the Workspace directory: allocated bytes as seen at its path,
 * which for a FUSE Workspace is what its daemon spools) every WATCH_MS at least, and kills the
 * execution's cgroup once it is over the cap. Between two looks a single file cannot outgrow
 * the cap either: RLIMIT_FSIZE is set to it (sandbox-launch.ts), which ends the writer with
 * SIGXFSZ. The overshoot is thus bounded by what the command writes across many files in one
 * interval; measuring takes time proportional to the number of files, so the interval grows
 * with it (four times the last measurement).
 */
import { spawn } from 'node:child_process';
import { killAll, type CgroupSet } from './cgroup.js';

const WATCH_MS = 250;

export interface DiskWatch {
  stop(): void;
  /** The Workspace went over the cap and the execution was killed for it. */
  readonly exceeded: boolean;
  /** The highest use measured, bytes. */
  readonly peakBytes: number;
}

function measure(path: string): Promise<number | null> {
  return new Promise((resolve) => {
    const du = spawn('du', ['-s', '-x', '--block-size=1', path], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    du.stdout.on('data', (b: Buffer) => (out += b.toString('latin1')));
    du.on('error', () => resolve(null));
    // du exits 1 when some entry vanished meanwhile; its total is still the best there is.
    du.on('close', () => {
      const n = Number(out.split('\t')[0]);
      resolve(out && Number.isFinite(n) ? n : null);
    });
  });
}

export function watchDisk(workspace: string, limitBytes: number, leaf: CgroupSet): DiskWatch {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  const state = { exceeded: false, peakBytes: 0 };
  const tick = async () => {
    const t0 = performance.now();
    const used = await measure(workspace);
    if (stopped) return;
    if (used !== null) {
      state.peakBytes = Math.max(state.peakBytes, used);
      if (used > limitBytes) {
        state.exceeded = true;
        await killAll(leaf);
        return;
      }
    }
    timer = setTimeout(() => void tick(), Math.max(WATCH_MS, 4 * (performance.now() - t0)));
    timer.unref();
  };
  void tick();
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
    get exceeded() {
      return state.exceeded;
    },
    get peakBytes() {
      return state.peakBytes;
    },
  };
}
