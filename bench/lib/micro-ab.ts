// What the A/B micro benches (bench/micro) share: `--name value` arguments, the scratch
// directory and the other checkout the twin-daemon benches take, that checkout's Client, each
// side's daemon environment, and a shell step that must succeed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '../../lib/sdk/index.js';

/** The value after `name` on the command line, or `dflt`. */
export function arg(name: string, dflt?: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : dflt;
}

/** --tmp DIR (a new scratch directory, absolute) and --before DIR (the checkout to compare with). */
export function scratchAndBefore(): { tmp: string; before: string } {
  const tmp = path.resolve(arg('--tmp') ?? '');
  if (!arg('--tmp') || fs.existsSync(path.join(tmp, 'a.sqlite'))) throw new Error('--tmp DIR: a new scratch directory');
  const before = arg('--before');
  if (!before) throw new Error('--before DIR: the checkout to compare with');
  return { tmp, before };
}

/** The SDK Client class of the checkout at `dir` (its sources, run through the same loader). */
export async function clientOf(dir: string): Promise<typeof Client> {
  return ((await import(path.resolve(dir, 'lib/sdk/index.ts'))) as { Client: typeof Client }).Client;
}

/** Runs `cmd` with sh; its stdout, or an Error with its stderr when it fails. */
export function sh(cmd: string): string {
  const r = spawnSync('sh', ['-c', cmd], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  return r.stdout;
}

/**
 * The environment of one side's daemon (`--before-env K=V,K=V`, `--after-env K=V`): a switch to
 * A/B against the same checkout (`--before .`). Empty when not given.
 */
export function sideEnv(side: 'before' | 'after'): [string, string][] {
  return (arg(`--${side}-env`) ?? '')
    .split(',')
    .filter(Boolean)
    .map((kv) => {
      const i = kv.indexOf('=');
      return [kv.slice(0, i), kv.slice(i + 1)] as [string, string];
    });
}

/** Runs `fn` (which starts a side's daemon) with `env` added to this process's environment, which the daemon inherits. */
export async function withEnv<T>(env: [string, string][], fn: () => Promise<T>): Promise<T> {
  for (const [k, v] of env) process.env[k] = v;
  try {
    return await fn();
  } finally {
    for (const [k] of env) delete process.env[k];
  }
}
