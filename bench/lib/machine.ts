// The machine a campaign ran on, recorded with its results: numbers are only comparable on the
// same hardware, kernel, filesystem and tool versions.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  os: string;
  /** Filesystem type holding the scratch directories (where Stores and .git are written). */
  tmpFs: string;
  git: string;
  tar: string;
  date: string;
  /** 1/5/15-minute load averages: a busy machine (other builds) makes timings noisy. */
  loadAvg: number[];
}

function firstLineOf(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).split('\n')[0]!.trim();
  } catch {
    return 'unknown';
  }
}

export function machineInfo(): Machine {
  let cpu = os.cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1] !== undefined) cpu = m[1].trim();
  } catch {
    // not Linux: keep os.cpus()
  }
  return {
    cpu,
    cores: os.cpus().length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    tmpFs: firstLineOf('stat', ['-f', '-c', '%T', os.tmpdir()]),
    git: firstLineOf('git', ['--version']),
    tar: firstLineOf('tar', ['--version']),
    date: new Date().toISOString(),
    loadAvg: os.loadavg().map((x) => Math.round(x * 100) / 100),
  };
}
