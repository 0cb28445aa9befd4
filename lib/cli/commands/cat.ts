/** cat: a file's content from any state, or a byte range of it. */
import type { Command } from 'commander';
import { isLayerFsError } from '../../sdk/errors.js';
import { byteCount } from '../args.js';
import { endQuietlyOnClosedPipe } from '../output.js';
import type { PlainCat } from '../plain-cat.js';
import { runBody, withReader, type CommandBody, type Runner } from '../runner.js';

interface CatOptions {
  offset?: string;
  length?: string;
}

function catBody(state: string, path: string, opts: CatOptions): CommandBody {
  return async (_out, g) => {
    const range = opts.offset !== undefined || opts.length !== undefined ? { offset: byteCount(opts.offset, '--offset'), length: byteCount(opts.length, '--length') } : undefined;
    await withReader(g.store, (r) => {
      try {
        // Written by the addon's output thread while the next bytes are read and verified;
        // only verified bytes reach stdout.
        r.writeFileTo(1, state, path, range);
      } catch (e) {
        // A reader that goes away ends the command quietly, like cat or git.
        if (isLayerFsError(e) && e.code === 'ERR_NATIVE_IO' && e.details.errno === 'EPIPE') return;
        throw e;
      }
    });
  };
}

export function registerCatCommand(program: Command, run: Runner): void {
  program
    .command('cat <state> <path>')
    .description("write a file's content from a state to stdout")
    .option('--offset <n>', 'start at this byte (reads only the chunks that overlap the range)')
    .option('--length <n>', 'at most this many bytes')
    .action((state: string, path: string, opts: CatOptions) => run(catBody(state, path, opts))());
}

/** A plain cat command line (plain-cat.ts), run as commander would run it: same output, errors and exit code. */
export async function runPlainCat(line: PlainCat): Promise<void> {
  endQuietlyOnClosedPipe();
  const state = { code: 0 };
  await runBody(line.globals, state, catBody(line.state, line.path, line));
  process.exitCode = state.code;
}
