// The remote race of the layerfs-remote cell (bench/cells/remote_push_clone.ts): 8 processes, each with its own Store (a clone of
// a small LayerStack), commit a file of their own on one Branch and push it at the same moment.
// Reconciling (default): all must land; strict: exactly one wins, the others get HeadMoved.
// Timed: from the go signal until every pusher exited.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client as ClientClass } from '../../lib/sdk/index.js';
import { nodeArgs } from '../../lib/workspace/node-child.js';

export interface RaceResult {
  ms: number;
  pushed: number;
  headMoved: number;
  /** Lost compare-and-swaps that were reconciled, summed over the pushers. */
  reconciles: number;
  /** Commits on the remote Branch afterwards (8 when all landed). */
  remoteCommits: number;
}

const RACERS = 8;
const ts = import.meta.url.endsWith('.ts');

function racer(args: string[]): { ready: Promise<void>; done: Promise<{ outcome?: string; error?: string; attempts?: number }> } {
  const worker = new URL(`./remote-race-worker.${ts ? 'ts' : 'js'}`, import.meta.url).pathname;
  const child = spawn(process.execPath, nodeArgs(worker, ...args), { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let ready!: () => void;
  const readyP = new Promise<void>((r) => (ready = r));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('ready\n')) ready();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<{ outcome?: string; error?: string; attempts?: number }>((resolve, reject) =>
    child.on('exit', (code) => {
      const line = out.split('\n').filter((l) => l.startsWith('{')).pop();
      if (code !== 0 || !line) reject(new Error(`race worker exited ${code}: ${err}`));
      else resolve(JSON.parse(line));
    }),
  );
  return { ready: readyP, done };
}

/** Runs one race on Branch `branch` of LayerStack `stack` (pushed already) of the remote at `url`. */
export async function race(Client: typeof ClientClass, url: string, tmp: string, stack: string, branch: string, strict: boolean): Promise<RaceResult> {
  const dir = path.join(tmp, `race-${branch}`);
  fs.mkdirSync(dir, { recursive: true });
  const go = path.join(dir, 'go');
  const racers = [];
  for (let i = 0; i < RACERS; i++) {
    const store = path.join(dir, `s${i}.layerfs`);
    (await Client.clone(url, store, { layerStack: stack })).client.close();
    racers.push(racer([store, path.join(dir, `ws${i}`), `w${i}.txt`, go, branch, strict ? 'strict' : 'reconcile']));
  }
  await Promise.all(racers.map((r) => r.ready));
  const t = performance.now();
  fs.writeFileSync(go, '');
  const results = await Promise.all(racers.map((r) => r.done));
  const ms = performance.now() - t;
  const check = (await Client.clone(url, path.join(dir, 'check.layerfs'), { layerStack: stack })).client;
  const remoteCommits = check.log(branch).length;
  check.close();
  return {
    ms,
    pushed: results.filter((r) => r.outcome === 'Pushed').length,
    headMoved: results.filter((r) => r.error === 'ERR_HEAD_MOVED').length,
    reconciles: results.reduce((n, r) => n + (r.attempts ?? 0), 0),
    remoteCommits,
  };
}
