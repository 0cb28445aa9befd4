/**
 * Excludes: what an import or a materialized commit leaves out, in gitignore syntax (the
 * `ignore` package): the patterns of `.layerfsignore` at the tree's root, then any given with
 * `--exclude`. Paths are '/'-joined and relative to the root; a directory's ends with '/', so
 * `build/` matches directories only, as in git.
 */
import type ignoreFn from 'ignore';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { LayerFsError } from '../../errors.js';

export const IGNORE_FILE = '.layerfsignore';

/** The `ignore` package, loaded when there is a pattern to match (a process that only reads never does). */
let ignoreModule: typeof ignoreFn | undefined;
const loadIgnore = (): typeof ignoreFn => (ignoreModule ??= createRequire(import.meta.url)('ignore') as typeof ignoreFn);

/** The patterns of `root/.layerfsignore` (none when it is absent). */
export function ignoreFilePatterns(root: string): string[] {
  try {
    return readFileSync(join(root, IGNORE_FILE), 'utf8').split(/\r?\n/);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw new LayerFsError('ERR_NATIVE_IO', `cannot read ${IGNORE_FILE}: ${code}`, { path: join(root, IGNORE_FILE), errno: code });
  }
}

/** A predicate for the walk, or undefined when nothing is excluded (the walk then builds no relative paths). */
export function excludeMatcher(root: string, extra: readonly string[] = []): ((relPath: string) => boolean) | undefined {
  for (const p of extra) {
    if (typeof p !== 'string' || p.trim() === '') throw new LayerFsError('ERR_INVALID_ARGUMENT', `an exclude pattern must be a non-empty string, got ${JSON.stringify(p)}`, { argument: 'exclude' });
  }
  const patterns = [...ignoreFilePatterns(root), ...extra].filter((p) => p.trim() !== '' && !p.startsWith('#'));
  if (patterns.length === 0) return undefined;
  const ig = loadIgnore()().add(patterns);
  return (relPath) => ig.ignores(relPath);
}
