// What every cell (bench/cells/*.ts) shares. A cell is a child process that measures one thing
// and prints exactly one JSON line on stdout: {cell, tier, ms, maxRssMiB, ...extra} on success,
// {cell, tier, error} (exit 1) on failure, {cell, tier, skipped} when it does not apply. Running
// each cell in its own process keeps peak RSS per cell honest and a crash contained.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

export type CellOutput = { cell: string; tier: string } & Record<string, unknown>;

/** This process's peak resident set so far, in MiB (resourceUsage reports KiB). */
export function selfMaxRssMiB(): number {
  return process.resourceUsage().maxRSS / 1024;
}

/** Prints the cell's one JSON line; adds this process's peak RSS unless the cell measured another. */
export function emit(out: CellOutput): void {
  const line = { maxRssMiB: round1(selfMaxRssMiB()), ...out };
  process.stdout.write(JSON.stringify(line) + '\n');
}

/** Prints an error line and exits 1; the runner turns it into an error row. */
export function fail(cell: string, tier: string, err: unknown): never {
  const error = err instanceof Error ? (err.stack ?? err.message) : String(err);
  process.stdout.write(JSON.stringify({ cell, tier, error }) + '\n');
  process.exit(1);
}

export interface External {
  ms: number;
  /** Peak RSS of the largest process in the command's tree (GNU time %M), MiB. */
  maxRssMiB: number;
  stderr: string;
}

/**
 * Runs argv under /usr/bin/time and returns wall ms (measured here, finer than time's %e) and
 * peak RSS. For `sh -c` pipelines, %M covers the largest process of the pipeline: wait4()
 * accounts reaped descendants. Throws on a non-zero exit.
 */
export function timeExternal(argv: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): External {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-time-'));
  const out = path.join(tmp, 'time.txt');
  try {
    const t0 = performance.now();
    const r = spawnSync('/usr/bin/time', ['-f', '%e %M', '-o', out, ...argv], {
      env: opts.env ?? process.env,
      cwd: opts.cwd,
      stdio: ['ignore', 'ignore', 'pipe'],
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    const ms = performance.now() - t0;
    if (r.error) throw r.error;
    if (r.status !== 0) throw new Error(`${argv.join(' ')} exited ${r.status}: ${r.stderr.slice(-2000)}`);
    const fields = fs.readFileSync(out, 'utf8').trim().split('\n').pop()!.split(' ');
    return { ms, maxRssMiB: Number(fields[1]) / 1024, stderr: r.stderr };
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Apparent size of a directory tree in bytes (du -sb), as in the peer-floor figures. */
export function duBytes(p: string): number {
  const r = spawnSync('du', ['-sb', p], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`du -sb ${p}: ${r.stderr}`);
  return Number(r.stdout.split('\t')[0]);
}

/** Disk space actually allocated (du -s -B1): block rounding makes 100k small objects cost more
 * than their apparent size. */
export function duAllocatedBytes(p: string): number {
  const r = spawnSync('du', ['-s', '-B1', p], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`du -s -B1 ${p}: ${r.stderr}`);
  return Number(r.stdout.split('\t')[0]);
}

export function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

/** A shell-quoted word, for the few `sh -c` pipelines. */
export function shq(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
