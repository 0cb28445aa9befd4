/** log: a Branch's Commits, newest first, optionally only those that changed a path. */
import type { Command } from 'commander';
import { usage } from '../args.js';
import { withClient, withReader, type Runner } from '../runner.js';

/** A message's first line, as `git log --oneline` shows it. */
function oneLine(message: string): string {
  return message.split('\n', 1)[0]!.trim();
}

export function registerLogCommand(program: Command, run: Runner): void {
  program
    .command('log <branch> [path...]')
    .usage('[options] <branch> [-- path...]')
    .description("a Branch's Commits (or a checkpoint's: from the Commit it pinned), newest first, one line each (id, message); with -- PATH only those that changed it")
    .option('-n, --limit <n>', 'at most n Commits', (v) => Number(v))
    .action((name: string, paths: string[], opts: { limit?: number }) =>
      run(async (out, g) => {
        if (paths.length > 1) throw usage('give at most one path after --');
        // Without a path only the read side is needed (the Reader); a path needs the Client's diff.
        const commits = paths.length
          ? await withClient(g.store, (c) => c.log(name, { limit: opts.limit, path: paths[0] }), true)
          : await withReader(g.store, (r) => r.log(name, { limit: opts.limit }));
        out.result({ commits }, () => commits.map((c) => `${c.id.slice(0, 12)} ${oneLine(c.message) || '(no message)'}${c.pruned ? ' (pruned)' : ''}`));
      })(),
    );
}
