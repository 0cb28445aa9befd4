/** retention set | show: which Commits of each Branch stay reachable (db gc deletes the rest). */
import type { Command } from 'commander';
import { LayerFsError } from '../../sdk/index.js';
import { withClient, type Runner } from '../runner.js';

/** Parses `30d`, `12h`, `90m`, `45s`, `500ms`, `2w`. */
function duration(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d|w)$/.exec(text.trim());
  if (!m) throw new LayerFsError('ERR_INVALID_ARGUMENT', `--older-than must be a number and a unit (ms, s, m, h, d, w), got ${JSON.stringify(text)}`, { argument: '--older-than', hint: 'for example 30d' });
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[m[2] as 'ms'];
}

function count(text: string, flag: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(Number.isSafeInteger(n) && n >= 1)) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${flag} must be a whole number of at least 1, got ${JSON.stringify(text)}`, { argument: flag });
  return n;
}

function showDuration(ms: number | null): string {
  if (ms === null) return '-';
  for (const [unit, n] of [['w', 604_800_000], ['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) if (ms % n === 0 && ms >= n) return `${ms / n}${unit}`;
  return `${ms}ms`;
}

export function registerRetentionCommands(program: Command, run: Runner): void {
  const ret = program.command('retention').description('which Commits of each Branch stay reachable');
  setCommand(ret, run);
  showCommand(ret, run);
}

function setCommand(ret: Command, run: Runner): void {
  ret
    .command('set')
    .description('set the policy: a Commit is pruned once it is beyond the newest N of its Branch and older than DUR')
    .option('--branch-commits <n>', 'keep each Branch\'s newest n Commits ("none" clears the rule)')
    .option('--older-than <dur>', 'keep Commits younger than this, e.g. 30d ("none" clears the rule)')
    .action((opts: { branchCommits?: string; olderThan?: string }) =>
      run(async (out, g) => {
        if (opts.branchCommits === undefined && opts.olderThan === undefined) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'give --branch-commits N and/or --older-than DUR');
        const p = {
          branchCommits: opts.branchCommits === undefined ? undefined : opts.branchCommits === 'none' ? null : count(opts.branchCommits, '--branch-commits'),
          olderThanMs: opts.olderThan === undefined ? undefined : opts.olderThan === 'none' ? null : duration(opts.olderThan),
        };
        const r = await withClient(g.store, (c) => c.setRetention(p));
        out.result(r, () => `retention: branch-commits ${r.branchCommits ?? '-'}, older-than ${showDuration(r.olderThanMs)}`);
      })(),
    );
}

function showCommand(ret: Command, run: Runner): void {
  ret
    .command('show')
    .description('print the policy')
    .action(() =>
      run(async (out, g) => {
        const r = await withClient(g.store, (c) => c.retention(), true);
        out.result(r, () => (r.branchCommits === null && r.olderThanMs === null ? 'retention: every Commit is kept' : `retention: branch-commits ${r.branchCommits ?? '-'}, older-than ${showDuration(r.olderThanMs)}`));
      })(),
    );
}
