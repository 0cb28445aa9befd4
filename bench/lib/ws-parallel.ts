// Runs the workers of a multi-Workspace cell (see ws-worker.ts) at the same time: spawns them,
// waits until every one has printed {"ready":true}, sends the start signal to all, and collects
// each worker's final JSON line. wallMs runs from the start signal to the last worker's exit.
// Not a cell.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { nodeArgs } from '../../lib/workspace/node-child.js';
import { median, percentile, r1 } from './measure.js';

// The worker beside this file: TypeScript under tsx, or its precompiled JS (bench/lib/compile.ts).
const SELF = fileURLToPath(import.meta.url);
const WORKER = path.join(path.dirname(SELF), SELF.endsWith('.ts') ? 'ws-worker.ts' : 'ws-worker.js');

export interface WorkerResult {
  worker: number;
  commitMs: number[];
  loopMs: number;
  outcomes: Record<string, number>;
  errors: string[];
  retries: number;
  semantic: number;
  allocated: number;
  changedBytes: number;
  maxRssMiB: number;
}

export async function runWorkers(argsOf: (i: number) => string[], n: number, timeoutMs = 30 * 60_000): Promise<{ wallMs: number; results: WorkerResult[] }> {
  const procs = Array.from({ length: n }, (_, i) =>
    spawn(process.execPath, nodeArgs(WORKER, ...argsOf(i), '--worker', String(i)), { stdio: ['pipe', 'pipe', 'pipe'] }),
  );
  const lines: string[][] = procs.map(() => []);
  const stderr: string[] = procs.map(() => '');
  let ready = 0;
  let t0 = 0;
  let onReady: () => void = () => {};
  const allReady = new Promise<void>((resolve) => (onReady = resolve));
  const exits = procs.map(
    (p, i) =>
      new Promise<number>((resolve) => {
        let buf = '';
        p.stdout.setEncoding('utf8');
        p.stdout.on('data', (d: string) => {
          buf += d;
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            lines[i]!.push(line);
            if (line.includes('"ready":true') && ++ready === n) onReady();
          }
        });
        p.stderr.setEncoding('utf8');
        p.stderr.on('data', (d: string) => (stderr[i] = (stderr[i]! + d).slice(-4000)));
        p.on('close', (code) => {
          if (buf.trim() !== '') lines[i]!.push(buf);
          resolve(code ?? -1);
        });
      }),
  );
  const timer = setTimeout(() => procs.forEach((p) => p.kill('SIGKILL')), timeoutMs);
  try {
    // A worker that dies before it is ready must not leave us waiting.
    const first = await Promise.race([allReady.then(() => 'ready' as const), Promise.all(exits).then(() => 'ended' as const)]);
    if (first === 'ended' && ready < n) throw new Error('workers ended before all were ready');
    t0 = performance.now();
    for (const p of procs) p.stdin.end('go\n');
    await Promise.all(exits);
    const wallMs = performance.now() - t0;
    const results = procs.map((_, i) => {
      const last = lines[i]!.filter((l) => l.trim().startsWith('{')).pop();
      const v = last ? (JSON.parse(last) as Record<string, unknown>) : undefined;
      if (v === undefined || typeof v.error === 'string' || !Array.isArray(v.commitMs)) {
        throw new Error(`worker ${i}: ${typeof v?.error === 'string' ? v.error : `no result; stderr: ${stderr[i]}`}`);
      }
      return v as unknown as WorkerResult;
    });
    return { wallMs, results };
  } catch (err) {
    procs.forEach((p) => p.kill('SIGKILL'));
    const why = procs.map((_, i) => lines[i]!.find((l) => l.includes('"error"')) ?? '').filter((s) => s !== '');
    throw new Error(`${err instanceof Error ? err.message : String(err)}${why.length ? `: ${why.join(' | ').slice(0, 2000)}` : ''}`);
  } finally {
    clearTimeout(timer);
  }
}

/** The figures both multi-Workspace cells report. */
export function summarize(wallMs: number, results: WorkerResult[]): Record<string, unknown> {
  const all = results.flatMap((r) => r.commitMs);
  const commitSum = all.reduce((s, v) => s + v, 0);
  return {
    ms: r1(wallMs),
    workers: results.length,
    commits: all.length,
    commitsPerS: r1(all.length / (wallMs / 1000)),
    perWorkerCommitsPerS: results.map((r) => r1(r.commitMs.length / (r.loopMs / 1000))),
    medianCommitMs: r1(median(all)),
    p90CommitMs: r1(percentile(all, 90)),
    maxCommitMs: r1(Math.max(...all)),
    commitSumMs: r1(commitSum),
    loopMs: results.map((r) => r1(r.loopMs)),
    retries: results.reduce((s, r) => s + r.retries, 0),
    errors: results.flatMap((r) => r.errors).slice(0, 5),
    outcomes: results.reduce<Record<string, number>>((acc, r) => {
      for (const [k, v] of Object.entries(r.outcomes)) acc[k] = (acc[k] ?? 0) + v;
      return acc;
    }, {}),
    changedBytes: results.reduce((s, r) => s + r.changedBytes, 0),
    workerMaxRssMiB: r1(Math.max(...results.map((r) => r.maxRssMiB))),
  };
}
