#!/usr/bin/env node
// Runs every test file with node's built-in runner under tsx. Globs are expanded here because
// Node 20's --test does not expand them itself; files run in separate child processes, which
// FUSE suites need (a mount must not be served by the process that reads it). The timeout
// bounds every test file and test so nothing hangs CI; it is 15 minutes because the pack test
// compiles the whole addon (zstd included) and took over 5 minutes on 2 loaded cores.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const only = process.argv.slice(2);

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (name === 'fixtures' || name === 'node_modules') return [];
    return statSync(p).isDirectory() ? walk(p) : p.endsWith('.test.ts') ? [p] : [];
  });
}

const files = walk(join(root, 'test'))
  .map((p) => relative(root, p))
  .filter((p) => only.length === 0 || only.some((o) => p.includes(o)))
  .sort();
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=900000', ...files], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
