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

/** Deterministic bytes (xorshift32) so fixtures are the same on every run. */
export function seededBytes(seed: number, n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    b[i] = x & 0xff;
  }
  return b;
}
