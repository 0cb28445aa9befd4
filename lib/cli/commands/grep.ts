/** grep: search a state's files without exporting it. */
import type { Command } from 'commander';
import { withClient, type ExitState, type Runner } from '../runner.js';

export function registerGrepCommand(program: Command, run: Runner, state: ExitState): void {
  program
    .command('grep <pattern> <state> [path...]')
    .usage('[options] <pattern> <state> [-- path...]')
    .description("search a state's files without exporting it (path:line:text; exits 1 when nothing matches)")
    .option('-i, --ignore-case', 'ignore case')
    .option('-F, --fixed-strings', 'the pattern is plain text, not a regular expression')
    .option('-l, --files-with-matches', 'print only the names of matching files')
    .option('-a, --text', 'search binary files as text')
    .option('-m, --limit <n>', 'stop after n matching lines (default 10000)')
    .action((pattern: string, ref: string, paths: string[], f: { ignoreCase?: boolean; fixedStrings?: boolean; filesWithMatches?: boolean; text?: boolean; limit?: string }) =>
      run(async (out, g) => {
        const limit = f.limit === undefined ? undefined : Number(f.limit);
        const r = await withClient(g.store, (c) => c.grep(pattern, ref, { paths, ignoreCase: f.ignoreCase, fixed: f.fixedStrings, text: f.text, limit }), true);
        out.result(r, () => {
          const lines = f.filesWithMatches ? [...new Set(r.matches.map((m) => m.path))] : r.matches.map((m) => `${m.path}:${m.line}:${m.text}`);
          for (const b of r.binaryFiles) lines.push(f.filesWithMatches ? b : `Binary file ${b} matches`);
          if (r.truncated) lines.push(`… stopped after ${r.matches.length} lines (raise --limit)`);
          return lines;
        });
        if (r.matches.length === 0 && r.binaryFiles.length === 0) state.code = 1;
      })(),
    );
}
