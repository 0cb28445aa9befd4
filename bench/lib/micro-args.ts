// Command-line reading shared by the A/B micro benches (bench/micro): `--name value` pairs, and
// the scratch directory and the other checkout that the twin-daemon benches take.
import fs from 'node:fs';
import path from 'node:path';

/** The value after `name` on the command line, or `dflt`. */
export function arg(name: string, dflt?: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : dflt;
}

/** --tmp DIR (a new scratch directory, absolute) and --before DIR (the checkout to compare with). */
export function scratchAndBefore(): { tmp: string; before: string } {
  const tmp = path.resolve(arg('--tmp') ?? '');
  if (!arg('--tmp') || fs.existsSync(path.join(tmp, 'a.sqlite'))) throw new Error('--tmp DIR: a new scratch directory');
  const before = arg('--before');
  if (!before) throw new Error('--before DIR: the checkout to compare with');
  return { tmp, before };
}
