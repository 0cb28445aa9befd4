// startScan: scanPaths on the addon's threads, waited for on the calling thread (take()).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { scanPaths, startScan } from '../../lib/native/index.js';
import { loaderFlags } from '../../lib/workspace/node-child.js';
import { seededBytes } from './helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

function tree(n: number): { dir: string; paths: string[] } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'layerfs-scan-sync-'));
  const paths: string[] = [];
  for (let i = 0; i < n; i++) {
    const f = path.join(dir, `f${i}`);
    // Sizes across the small-file threshold and past maxDataSize.
    fs.writeFileSync(f, seededBytes(i, [0, 100, 5000, 70_000, 300_000][i % 5]!));
    paths.push(f);
  }
  paths.push(path.join(dir, 'missing'));
  return { dir, paths };
}

test('startScan().take() gives what scanPaths resolves to, data read into the arena; a second take() throws', async () => {
  const { dir, paths } = tree(40);
  try {
    const opts = { readData: true, smallFileThreshold: 64 * 1024, maxDataSize: 200_000, digestOversize: false, xattrs: false };
    const arena = Buffer.alloc(4 * 1024 * 1024);
    const pending = startScan(paths, { ...opts, dataArena: arena });
    const expected = await scanPaths(paths, opts);
    const batch = pending.take();
    assert.equal(batch.count, paths.length);
    for (let i = 0; i < paths.length; i++) {
      const got = batch.entry(i)!;
      const want = expected[i]!;
      assert.equal(Boolean(got.error), Boolean(want.error), paths[i]);
      if (got.error || want.error) {
        assert.equal(got.error?.code, want.error?.code);
        continue;
      }
      assert.equal(got.size, want.size);
      assert.equal(Boolean(got.data), Boolean(want.data), `${paths[i]}: read whole in both or neither`);
      if (got.data) {
        assert.ok(got.data.equals(want.data!), `${paths[i]}: the same bytes`);
        if (got.size > 0) assert.ok(got.data.buffer === arena.buffer, `${paths[i]}: read into the arena`);
      }
      assert.deepEqual(got.digest?.contentId, want.digest?.contentId);
    }
    assert.throws(() => pending.take(), /taken already/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a started scan whose handle is dropped without take() is stopped when collected; the process exits cleanly', () => {
  const { dir, paths } = tree(200);
  try {
    const code =
      `import { startScan } from './lib/native/index.ts';` +
      `import v8 from 'node:v8'; import vm from 'node:vm';` +
      `v8.setFlagsFromString('--expose-gc'); const gc = vm.runInNewContext('gc');` +
      `const paths = ${JSON.stringify(paths)};` +
      `for (let i = 0; i < 20; i++) startScan(paths, { readData: true, dataArena: Buffer.alloc(8 << 20) });` +
      `gc(); await new Promise((r) => setTimeout(r, 50)); gc();` +
      `const b = startScan(paths, { readData: true }).take(); console.log(b.count);`;
    const r = spawnSync(process.execPath, [...loaderFlags(), '--input-type=module', '-e', code], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), String(paths.length));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
