// The `layerfs` command as a user runs it, from a cell: compiled JavaScript (`node lib/cli/bin.js`
// of the bench's compiled copy, the same file-by-file ESM as the package's dist/) when the cell
// runs compiled, else from sources through tsx (a development run; slower start).

import { fileURLToPath } from 'node:url';

/** argv that runs `layerfs …`: prepend it to the command's own arguments. */
export function layerfsCommand(): string[] {
  const compiled = import.meta.url.endsWith('.js');
  const bin = fileURLToPath(new URL(`../../lib/cli/bin.${compiled ? 'js' : 'ts'}`, import.meta.url));
  return compiled ? [process.execPath, bin] : [process.execPath, '--import', 'tsx', bin];
}

/** A shell word for `s` (single-quoted). */
export const shellWord = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
