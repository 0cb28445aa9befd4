// The git peer's plumbing, the same for every git cell: an environment that ignores global and
// system config with fixed identities and dates, automatic gc off, and timed or untimed runs.

import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { timeExternal } from './cell.js';


/** Environment for a git peer with GIT_DIR and GIT_WORK_TREE given, ignoring global and system
 * config, with fixed identities and dates (the same for every git cell). */
export function gitEnv(gitDir: string, workTree?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_DIR: gitDir,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'bench',
    GIT_AUTHOR_EMAIL: 'bench@example.invalid',
    GIT_COMMITTER_NAME: 'bench',
    GIT_COMMITTER_EMAIL: 'bench@example.invalid',
    GIT_AUTHOR_DATE: '1700000000 +0000',
    GIT_COMMITTER_DATE: '1700000000 +0000',
  };
  if (workTree !== undefined) env.GIT_WORK_TREE = workTree;
  else delete env.GIT_WORK_TREE;
  return env;
}

/** The same, for a repository found from the working directory (worktrees need that). */
export function gitEnvPlain(): NodeJS.ProcessEnv {
  const env = gitEnv('');
  delete env.GIT_DIR;
  return env;
}

/** git with automatic gc and maintenance off: a detached `gc --auto` must not run while we time. */
export const GIT = 'git -c gc.auto=0 -c maintenance.auto=false';
export const GIT_ARGS = ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false'];

/** Runs git synchronously (untimed plumbing); returns stdout, throws on a non-zero exit. */
export function git(args: string[], env: NodeJS.ProcessEnv, cwd?: string): string {
  const r = spawnSync('git', [...GIT_ARGS, ...args], { env, cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} exited ${r.status}: ${r.stderr.slice(-1500)}`);
  return r.stdout;
}

/** A git command line run under /usr/bin/time (wall ms and peak RSS), via `sh -c`. */
export function gitTimed(cmd: string, env: NodeJS.ProcessEnv, cwd?: string): { ms: number; maxRssMiB: number } {
  const r = timeExternal(['sh', '-c', cmd], { env, cwd });
  return { ms: r.ms, maxRssMiB: r.maxRssMiB };
}

/** A git command run directly (no shell, no /usr/bin/time), timed here: for loops of many commits. */
export function gitQuick(args: string[], env: NodeJS.ProcessEnv, cwd?: string): number {
  const t = performance.now();
  git(args, env, cwd);
  return performance.now() - t;
}

/** `git init && git add -A && git commit -m init` in `dir` (the untimed setup of a git peer); ms. */
export function gitInitCommit(env: NodeJS.ProcessEnv, dir: string): number {
  return gitQuick(['init', '-q'], env, dir) + gitQuick(['add', '-A'], env, dir) + gitQuick(['commit', '-q', '-m', 'init'], env, dir);
}
