/** cat: a file's content from any state, or a byte range of it. */
import type { Command } from 'commander';
import { byteCount } from '../args.js';
import { writeStdout } from '../output.js';
import { withReader, type Runner } from '../runner.js';

export function registerCatCommand(program: Command, run: Runner): void {
  program
    .command('cat <state> <path>')
    .description("write a file's content from a state to stdout")
    .option('--offset <n>', 'start at this byte (reads only the chunks that overlap the range)')
    .option('--length <n>', 'at most this many bytes')
    .action((state: string, path: string, opts: { offset?: string; length?: string }) =>
      run(async (_out, g) => {
        const range = opts.offset !== undefined || opts.length !== undefined ? { offset: byteCount(opts.offset, '--offset'), length: byteCount(opts.length, '--length') } : undefined;
        await withReader(g.store, async (r) => {
          for (const piece of r.readFile(state, path, range)) await writeStdout(piece);
        });
      })(),
    );
}
