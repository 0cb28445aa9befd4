/**
 * `layerfs cat STATE PATH` read without commander. A pipeline runs cat more than any other
 * command, and for it loading commander and building the program's table of commands cost more
 * than looking the file up (docs/BENCHMARKS.md, 2026-12-03). Only the plain shape is taken here:
 * program flags (`--json`, `-q`, `--store`) before `cat`, then STATE and PATH and cat's own
 * `--offset`/`--length`, read by node's util.parseArgs. Anything else (help, an unknown or
 * misplaced option, `--`, an operand that starts with `-`, a missing or extra operand) is left to
 * commander, which answers it exactly as before.
 */
import { parseArgs } from 'node:util';
import type { Globals } from './runner.js';

export interface PlainCat {
  globals: Globals;
  state: string;
  path: string;
  offset?: string;
  length?: string;
}

const GLOBAL = new Set(['json', 'quiet', 'store']);

/** The cat command line `args` (argv after the script) is, when it has the plain shape; else undefined. */
export function plainCat(args: string[]): PlainCat | undefined {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      tokens: true,
      options: { json: { type: 'boolean' }, quiet: { type: 'boolean', short: 'q' }, store: { type: 'string' }, offset: { type: 'string' }, length: { type: 'string' } },
    });
  } catch {
    return undefined;
  }
  const { tokens, values, positionals } = parsed;
  if (positionals.length !== 3 || positionals[0] !== 'cat' || positionals.some((p) => p.startsWith('-'))) return undefined;
  const at = tokens.findIndex((t) => t.kind === 'positional');
  for (const [i, t] of tokens.entries()) {
    if (t.kind === 'option-terminator') return undefined;
    // Program flags before the command name, cat's options after it: where commander reads them.
    if (t.kind === 'option' && GLOBAL.has(t.name) !== i < at) return undefined;
  }
  return {
    globals: { json: values.json === true, quiet: values.quiet, store: values.store },
    state: positionals[1]!,
    path: positionals[2]!,
    offset: values.offset,
    length: values.length,
  };
}
