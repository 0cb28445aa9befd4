import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { removeTree } from '../../lib/store/remove-tree.js';

/** A fresh temporary directory, removed when the test file ends. */
export function tempDir(prefix = 'layerfs-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  // Iterative: some tests build trees deeper than node's recursive rmSync can remove.
  after(() => removeTree(d));
  return d;
}

/** Deterministic bytes so fixtures are the same on every run (one generator: random.ts). */
export { seededBytes } from './random.js';
