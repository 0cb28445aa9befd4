// Where the harness lives and writes. Everything is derived from this file's location so the
// runner and the cells work from any working directory.

import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** bench/ itself; compiled cells (lib/compile.ts) run from a temporary copy and are told where it is. */
export const BENCH_DIR = process.env.LAYERFS_BENCH_DIR ?? path.dirname(path.dirname(fileURLToPath(import.meta.url)));
export const REPO_ROOT = path.dirname(BENCH_DIR);
/** Generated fixtures, reused across runs (git-ignored). */
export const FIXTURES_DIR = path.join(BENCH_DIR, '.fixtures');
/** Machine-readable results (git-ignored). */
export const OUT_DIR = path.join(BENCH_DIR, '.out');
export const CELLS_DIR = path.join(BENCH_DIR, 'cells');
export const FAMILIES_DIR = path.join(BENCH_DIR, 'families');
/** The micro-benchmark entry point of the native addon; optional. */
export const NATIVE_BENCH = path.join(BENCH_DIR, 'micro', 'native.bench.ts');
export const DOCS_DIR = path.join(REPO_ROOT, 'docs');
