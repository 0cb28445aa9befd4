// One materialized Workspace committed right after each tool-like edit, as an agent does: the
// 1,000-file tree of `multi_workspace_development`, ROUNDS rounds of devEdit (10 files, 64-byte
// edits, seeded per round) then `commitWorkspace`, in one process per checkout, and with --pause
// the same loop with the edits made 25 ms before each commit (not timed: the racy timestamp tick
// is then past, so the difference is what the tick's wait costs). With --before DIR the other
// checkout runs the same loop on the same tree, alternated per pair.
//   node --import tsx bench/micro/commit-after-edit.bench.ts --tmp DIR [--before DIR] [--pairs N] [--rounds N] [--pause]  → JSON lines
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ensureTree } from '../fixtures/tree.js';
import { devEdit } from '../lib/file-ops.js';
import { arg, clientOf } from '../lib/micro-ab.js';

const FILES = 1000;
const here = fileURLToPath(import.meta.url);
const root = path.resolve(path.dirname(here), '../..');

/** One checkout's loop, in this process (`--run CHECKOUT`): prints {"commitMs","cpuMs"} per commit, averaged. */
async function runLoop(checkout: string, dir: string, src: string, rounds: number, pause: boolean): Promise<void> {
  const Client = await clientOf(checkout);
  let c = Client.create(path.join(dir, 'store.layerfs'));
  const init = await c.initLayerStack({ name: 'bench', source: src });
  c.forkBranch({ name: 'w0', layer: init.layer.id });
  const ws = await c.createWorkspace('w0', { at: path.join(dir, 'ws') });
  await c.close();
  c = Client.connect(path.join(dir, 'store.layerfs'));
  await c.commitWorkspace(ws.id);
  let commitMs = 0;
  const cpu0 = process.cpuUsage();
  for (let j = 0; j < rounds; j++) {
    devEdit(ws.path, FILES, 10_000 + j, 1_700_002_000 + j);
    if (pause) await new Promise((r) => setTimeout(r, 25));
    const t = performance.now();
    const r = await c.commitWorkspace(ws.id);
    commitMs += performance.now() - t;
    if (r.outcome !== 'Created') throw new Error(`round ${j}: outcome ${r.outcome}`);
  }
  const cpu = process.cpuUsage(cpu0);
  await c.close();
  console.log(JSON.stringify({ commitMs: +(commitMs / rounds).toFixed(2), cpuMs: +((cpu.user + cpu.system) / 1000 / rounds).toFixed(2) }));
}

const run = arg('--run');
if (run) {
  await runLoop(run, arg('--dir')!, arg('--src')!, Number(arg('--rounds')), process.argv.includes('--pause'));
} else {
  const tmp = path.resolve(arg('--tmp') ?? fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-cae-')));
  const before = arg('--before');
  const pairs = Number(arg('--pairs', '3'));
  const rounds = arg('--rounds', '300')!;
  const src = ensureTree(FILES).dir;
  const sides: [string, string][] = [['now', root], ...(before ? [['before', path.resolve(before)] as [string, string]] : [])];
  const variants = process.argv.includes('--pause') ? [false, true] : [false];
  for (let p = 0; p < pairs; p++) {
    for (const pause of variants) {
      // The order alternates per pair so neither side always runs on the warmer machine.
      for (const [name, checkout] of p % 2 === 0 ? sides : [...sides].reverse()) {
        const dir = path.join(tmp, `${p}-${name}-${pause ? 'pause' : 'now'}`);
        fs.mkdirSync(dir, { recursive: true });
        const load = os.loadavg()[0]!.toFixed(1);
        const args = ['--import', 'tsx', here, '--run', checkout, '--dir', dir, '--src', src, '--rounds', rounds, ...(pause ? ['--pause'] : [])];
        const r = spawnSync(process.execPath, args, { encoding: 'utf8', cwd: checkout });
        if (r.status !== 0) throw new Error(`${name}: ${r.stderr.slice(-2000)}`);
        console.log(JSON.stringify({ pair: p, code: name, pause, load, ...JSON.parse(r.stdout.trim().split('\n').pop()!) }));
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  }
}
