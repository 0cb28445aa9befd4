/** sandbox create | status | stop | remove: named execution profiles with a cgroup each (docs/CLI.md). */
import type { Command } from 'commander';
import type { SandboxState } from '../../sdk/index.js';
import { collect } from '../args.js';
import { formatBytes } from '../output.js';
import { withClient, type ExitState, type Runner } from '../runner.js';

/** A number option exactly as typed; the SDK rejects what is not a positive number. */
const numeric = (v: string): number => (/^\s*$/.test(v) ? NaN : Number(v));

function describe(s: SandboxState): string[] {
  const p = s.profile;
  const limits = [
    `memory ${p.memoryMib === null ? 'unlimited' : `${p.memoryMib} MiB`}`,
    `cpus ${p.cpus ?? 'unlimited'}`,
    `pids ${p.pidsLimit ?? 'unlimited'}`,
    `disk ${p.diskMib === null ? 'unlimited' : `${p.diskMib} MiB`}`,
    `network ${p.network}`,
  ].join(', ');
  const lines = [`${s.name}\t${s.state}\t${limits}`];
  if (s.use) lines.push(`  now: ${s.use.pids ?? '?'} processes, ${s.use.memoryBytes === null ? '?' : formatBytes(s.use.memoryBytes)} memory, ${s.use.cpuMs === null ? '?' : (s.use.cpuMs / 1000).toFixed(1)} s CPU`);
  for (const r of p.ro) lines.push(`  ro ${r}`);
  for (const r of p.rw) lines.push(`  rw ${r}`);
  if (s.workspaces.length) lines.push(`  Workspaces: ${s.workspaces.join(', ')}`);
  return lines;
}

export function registerSandboxCommands(program: Command, run: Runner, state: ExitState): void {
  const sb = program.command('sandbox').description('Sandboxes: limits, mounts and network for the executions of Workspaces');
  sb.command('create <name>')
    .description('create a Sandbox and its cgroup (ERR_SANDBOX_UNAVAILABLE when this machine cannot enforce it)')
    .option('--memory-mib <n>', 'memory limit (MiB); an execution past it ends OutOfMemory', numeric)
    .option('--cpus <n>', 'CPU time per second, in CPUs (1.5 = one and a half cores)', numeric)
    .option('--pids-limit <n>', 'most processes at once (default 4096)', numeric)
    .option('--disk-mib <n>', 'cap on the Workspace disk use while a command runs (MiB)', numeric)
    .option('--network <mode>', 'none (default: loopback only) or host')
    .option('--ro <path>', 'a host path visible read-only inside (repeatable)', collect, [])
    .option('--rw <path>', 'a host path visible read-write inside (repeatable)', collect, [])
    .action((name: string, o: { memoryMib?: number; cpus?: number; pidsLimit?: number; diskMib?: number; network?: 'none' | 'host'; ro: string[]; rw: string[] }) =>
      run(async (out, g) => {
        const s = await withClient(g.store, (c) => c.createSandbox(name, { memoryMib: o.memoryMib, cpus: o.cpus, pidsLimit: o.pidsLimit, diskMib: o.diskMib, network: o.network, ro: o.ro, rw: o.rw }));
        out.result({ outcome: 'Created', sandbox: s }, () => [`created Sandbox ${s.name} (cgroup v${s.cgroupVersion})`, ...describe(s)]);
      })(),
    );
  sb.command('status [name]')
    .description('the Sandbox (or every one): limits, state, current use, Workspaces')
    .action((name: string | undefined) =>
      run(async (out, g) => {
        const list = await withClient(g.store, (c) => c.sandboxStatus(name), true);
        out.result(name === undefined ? { sandboxes: list } : list[0]!, () => (list.length ? list.flatMap(describe) : ['no Sandboxes']));
      })(),
    );
  sb.command('stop <name>')
    .description('kill everything running in the Sandbox and remove its cgroup (the next execution makes it again)')
    .action((name: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.stopSandbox(name), true);
        out.result(r, () => (r.outcome === 'Stopped' ? `STOPPED killed ${r.killed} process(es)` : 'ALREADY_STOPPED'));
      })(),
    );
  sb.command('remove <name>')
    .description('stop the Sandbox and delete it (refused while Workspaces use it)')
    .action((name: string) =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.removeSandbox(name));
        out.result(r, () => `REMOVED ${name}`);
        void state;
      })(),
    );
}
