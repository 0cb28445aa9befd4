// Shared plumbing of the shared_branch cells: the starting tree, the workers, the checks.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { nodeArgs } from '../../lib/workspace/node-child.js';

export const SHARED_OPTIONS = {
  workers: { type: 'string', default: '8' },
  commits: { type: 'string', default: '50' },
  share: { type: 'string', default: '0.1' },
  overlap: { type: 'boolean', default: false },
} as const;

export interface WorkerOut {
  created: number;
  headMoved: number;
  conflicted: number;
  retries: number;
  commitMs: number[];
  shared: { commit: string; line: number; text: string }[];
  errors: string[];
  ms: number;
}

/** 100 small files and a shared file of 60 lines per worker. */
export function writeStart(dir: string, workers: number): void {
  mkdirSync(path.join(dir, 'src'), { recursive: true });
  for (let i = 0; i < 100; i++) writeFileSync(path.join(dir, 'src', `f${i}.txt`), `file ${i}\n`);
  writeFileSync(path.join(dir, 'shared.txt'), Array.from({ length: workers * 60 + 2 }, (_, i) => `line ${i}`).join('\n') + '\n');
}

// The worker beside this file: TypeScript under tsx, or its precompiled JS (bench/lib/compile.ts).
const SELF = fileURLToPath(import.meta.url);
const worker = path.join(path.dirname(SELF), SELF.endsWith('.ts') ? 'shared-branch-worker.ts' : 'shared-branch-worker.js');

/** Starts every worker, releases them together, returns the wall time and their outputs. */
export async function runSharedWorkers(argsOf: (i: number) => string[], n: number): Promise<{ wallMs: number; results: WorkerOut[] }> {
  const run = promisify(execFile);
  const start = Date.now() + 3000;
  const t0 = performance.now() + (start - Date.now());
  const results = await Promise.all(
    Array.from({ length: n }, (_, i) => run(process.execPath, nodeArgs(worker, ...argsOf(i), '--id', String(i), '--start', String(start)), { maxBuffer: 16 << 20 })),
  );
  const wallMs = performance.now() - t0;
  return { wallMs, results: results.map((r) => JSON.parse(r.stdout.trim()) as WorkerOut) };
}

export function summarize(wallMs: number, results: WorkerOut[]): Record<string, number> {
  const all = results.flatMap((r) => r.commitMs).sort((a, b) => a - b);
  const created = results.reduce((s, r) => s + r.created, 0);
  return {
    ms: Math.round(wallMs),
    commits: created,
    commitsPerS: Math.round((created / (wallMs / 1000)) * 10) / 10,
    medianCommitMs: Math.round((all[Math.floor(all.length / 2)] ?? 0) * 10) / 10,
    p90CommitMs: Math.round((all[Math.floor(all.length * 0.9)] ?? 0) * 10) / 10,
    headMoved: results.reduce((s, r) => s + r.headMoved, 0),
    conflicted: results.reduce((s, r) => s + r.conflicted, 0),
    retries: results.reduce((s, r) => s + r.retries, 0),
    sharedEdits: results.reduce((s, r) => s + r.shared.length, 0),
  };
}
