import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

/** Runs the CLI from sources in a child process, as a user would. */
export function cli(args: string[], env: Record<string, string> = {}): CliResult {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'lib/cli/bin.ts', ...args], { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8' });
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
