// Cell: sandboxed executions against plain ones, same run.
//   start  median wall ms of `true` run --rounds times each way: a plain spawnSync, a Workspace
//          exec without a Sandbox, and a Workspace exec inside one (cgroup leaf + sh + bwrap);
//          overhead = sandboxed − unsandboxed exec (goal ≤ 50 ms)
//   cpu    a two-process CPU burner for --seconds inside Sandboxes with --cpus 0.5, 1 and 1.5:
//          CPU time / wall time from the execution's resources, against the limit
// Root only (cgroups); skipped elsewhere.
//   node --import tsx bench/cells/sandbox_exec.ts --cell layerfs-sandbox-exec --op start --tmp SCRATCH --tier quick [--rounds 30] [--seconds 2]

import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Client } from '../../lib/sdk/index.js';
import { type CellResult, defineCell, type Given, runIfMain } from '../lib/define-cell.js';

const SANDBOX_OPTIONS = {
  op: { type: 'string', default: 'start' },
  rounds: { type: 'string', default: '30' },
  seconds: { type: 'string', default: '2' },
} as const;

const median = (xs: number[]) => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)]!;

async function world(tmp: string): Promise<Client> {
  const src = path.join(tmp, 'src');
  fs.mkdirSync(src, { recursive: true });
  fs.writeFileSync(path.join(src, 'a.txt'), 'a\n');
  const c = Client.create(path.join(tmp, 'store.sqlite'));
  await c.initLayerStack({ name: 's', source: src });
  c.forkBranch({ name: 'main', layer: 's' });
  return c;
}

async function start(c: Client, tmp: string, rounds: number): Promise<Record<string, unknown>> {
  c.createSandbox('bench', { memoryMib: 512, cpus: 1 });
  const plain = await c.createWorkspace('main', { at: path.join(tmp, 'plain'), projection: 'materialize' });
  const boxed = await c.createWorkspace('main', { at: path.join(tmp, 'boxed'), projection: 'materialize', sandbox: 'bench' });
  const spawnMs: number[] = [];
  const execMs: number[] = [];
  const sandboxMs: number[] = [];
  for (let i = 0; i < rounds + 2; i++) {
    let t0 = performance.now();
    spawnSync('true');
    const s = performance.now() - t0;
    t0 = performance.now();
    await c.exec(plain.id, ['true']);
    const e = performance.now() - t0;
    t0 = performance.now();
    const r = await c.exec(boxed.id, ['true']);
    const b = performance.now() - t0;
    if (r.exitCode !== 0) throw new Error(`sandboxed true exited ${r.exitCode}`);
    if (i < 2) continue; // warm-up
    spawnMs.push(s);
    execMs.push(e);
    sandboxMs.push(b);
  }
  const overhead = median(sandboxMs) - median(execMs);
  return { op: 'start', rounds, ms: median(sandboxMs), spawnMs: median(spawnMs), execMs: median(execMs), sandboxMs: median(sandboxMs), sandboxP90Ms: [...sandboxMs].sort((p, q) => p - q)[Math.floor(rounds * 0.9)], overheadMs: overhead };
}

async function cpu(c: Client, tmp: string, seconds: number): Promise<Record<string, unknown>> {
  const cases: Record<string, unknown>[] = [];
  for (const cpus of [0.5, 1, 1.5]) {
    const name = `cpu-${String(cpus).replace('.', '-')}`;
    const sb = c.createSandbox(name, { cpus });
    const cpuDir = sb.cgroupVersion === 1 ? sb.cgroups[2]! : sb.cgroups[0]!;
    const ws = await c.createWorkspace('main', { at: path.join(tmp, name), projection: 'materialize', sandbox: name });
    const burn = `timeout ${seconds} sh -c 'while :; do :; done' & timeout ${seconds} sh -c 'while :; do :; done' & wait`;
    const r = await c.exec(ws.id, ['sh', '-c', burn]);
    const res = r.resources!;
    // Periods in which the quota ran out: the limit at work even when the machine is too busy for
    // the share itself to reach it.
    const stat = fs.readFileSync(path.join(cpuDir, 'cpu.stat'), 'utf8');
    const field = (k: string) => {
      const line = stat.split('\n').find((l) => l.startsWith(`${k} `));
      return line === undefined ? null : Number(line.split(' ')[1]);
    };
    cases.push({ case: `cpus ${cpus}`, cpus, ms: res.wallMs, cpuMs: res.cpuMs, share: (res.cpuMs ?? 0) / res.wallMs, periods: field('nr_periods'), throttled: field('nr_throttled') });
  }
  return { op: 'cpu', seconds, cases };
}

async function sandboxExec(a: Given<typeof SANDBOX_OPTIONS, 'tmp'>): Promise<CellResult> {
  if (process.geteuid?.() !== 0) return { skipped: 'cgroups need root on this machine' };
  const tmp = a.tmp;
  const c = await world(tmp);
  try {
    const out = a.op === 'cpu' ? await cpu(c, tmp, Number(a.seconds)) : await start(c, tmp, Number(a.rounds));
    return { ...out };
  } finally {
    for (const w of c.workspaces()) await c.endWorkspace(w.id, { discard: true });
    for (const s of c.sandboxStatus()) await c.removeSandbox(s.name);
    c.close();
  }
}

export const sandboxExecCell = defineCell({
  file: import.meta.url,
  id: 'layerfs-sandbox-exec',
  tool: 'layerfs',
  args: SANDBOX_OPTIONS,
  required: ['tmp'],
  run: sandboxExec,
});

runIfMain(import.meta.url, sandboxExecCell);
