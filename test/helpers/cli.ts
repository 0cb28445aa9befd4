import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const bin = join(repoRoot, 'lib/cli/bin.ts');
const tsx = import.meta.resolve('tsx');
/**
 * An empty directory to run in: commands find a Store upward from their working directory, so
 * a `.layerfs/` in the repository (made by trying the README's tour) must not be found.
 */
let neutral: string | undefined;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

/** The argv that runs the CLI from sources, as `npx layerfs` would run the compiled one. */
export function cliArgv(args: string[]): string[] {
  return ['--import', tsx, bin, ...args];
}

/** Runs the CLI from sources in a child process, as a user would (in `cwd`, default an empty directory). */
export function cli(args: string[], env: Record<string, string> = {}, cwd?: string): CliResult {
  neutral ??= mkdtempSync(join(tmpdir(), 'layerfs-cwd-'));
  const r = spawnSync(process.execPath, cliArgv(args), { cwd: cwd ?? neutral, env: { ...process.env, LAYERFS_STORE: '', ...env }, encoding: 'utf8' });
  let json: any;
  if (args.includes('--json')) {
    try {
      json = JSON.parse(r.stdout);
    } catch {
      json = undefined;
    }
  }
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr, json };
}
