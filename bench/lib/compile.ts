// Precompiles the cells (and the lib/ and bench/ sources they import) to plain JS once per run,
// so each cell child process starts with `node X.js` instead of loading tsx and transforming
// every file again (≈0.5–1 s per cell on a loaded 2-core machine, times ~60 cells).
//
// esbuild transforms file by file (no bundling): the sources already import each other with
// `.js` specifiers, and the SDK is loaded through computed URLs, which a bundle could not follow.
// The output mirrors the repository layout in a temporary directory that also holds a copy of
// package.json (ESM scope, and the "layerfs" package root the addon loader looks for) and
// symlinks to node_modules/, build/ and prebuilds/, so the addon and packages resolve as from
// the repository. LAYERFS_BENCH_DIR tells the compiled bench/lib/paths.js where the real
// bench/ is (fixtures cache, results).

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { BENCH_DIR, REPO_ROOT } from './paths.js';

export interface CompiledCells {
  /** The temporary root (mirror of the repository). */
  root: string;
  /** Directory of the compiled cells (`<root>/bench/cells`). */
  cellsDir: string;
  /** Environment for the cell processes. */
  env: NodeJS.ProcessEnv;
  ms: number;
  remove(): void;
}

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name.startsWith('.') || e.name === 'node_modules' ? [] : sources(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

export async function compileCells(): Promise<CompiledCells> {
  const t0 = performance.now();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-bench-js-'));
  const remove = () => fs.rmSync(root, { recursive: true, force: true });
  try {
    await build({
      // The throw-away PostgreSQL cluster of the remote tests is shared with the remote cells.
      entryPoints: [...sources(path.join(REPO_ROOT, 'lib')), ...sources(BENCH_DIR), ...['postgres.ts', 'random.ts'].map((f) => path.join(REPO_ROOT, 'test', 'helpers', f))],
      outdir: root,
      outbase: REPO_ROOT,
      bundle: false,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      tsconfig: path.join(REPO_ROOT, 'tsconfig.json'),
      logLevel: 'silent',
    });
    fs.copyFileSync(path.join(REPO_ROOT, 'package.json'), path.join(root, 'package.json'));
    for (const name of ['node_modules', 'build', 'prebuilds']) {
      const target = path.join(REPO_ROOT, name);
      if (fs.existsSync(target)) fs.symlinkSync(target, path.join(root, name), 'dir');
    }
  } catch (e) {
    remove();
    throw e;
  }
  return {
    root,
    cellsDir: path.join(root, 'bench', 'cells'),
    env: { ...process.env, LAYERFS_BENCH_DIR: BENCH_DIR },
    ms: performance.now() - t0,
    remove,
  };
}

/** The command line that runs a cell file: compiled JS directly, TypeScript through tsx. */
export function nodeArgsFor(file: string): string[] {
  return file.endsWith('.ts') ? ['--import', 'tsx', file] : [file];
}
