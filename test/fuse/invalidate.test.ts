// After a FUSE Workspace moves onto changes made elsewhere (a reconciling commit, or a commit
// with nothing to store after the Branch moved), the kernel shows them at once: the daemon
// invalidates the entries, attributes and pages the kernel had cached (60 s otherwise).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { appendFile, lstat, open, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '../../lib/sdk/index.js';
import { detachStale, fuseAvailable } from '../../lib/fuse/index.js';
import { assertIntact } from '../helpers/integrity.js';
import { seededBytes, tempDir } from '../helpers/tmp.js';

const BIG = 1024 * 1024;
const fuseSkip = fuseAvailable().ok ? false : `FUSE is not usable here: ${fuseAvailable().reason}`;

test('a reconciling commit and a move onto a new head invalidate what the kernel cached', { skip: fuseSkip, timeout: 300_000 }, async () => {
  const dir = tempDir('layerfs-inval-');
  const src = join(dir, 'src');
  mkdirSync(join(src, 'd'), { recursive: true });
  writeFileSync(join(src, 'a.txt'), 'one\n');
  writeFileSync(join(src, 'big.bin'), seededBytes(9, BIG));
  writeFileSync(join(src, 'gone.txt'), 'gone\n');
  writeFileSync(join(src, 'old-name.txt'), 'moved\n');
  writeFileSync(join(src, 'd/x.txt'), 'x\n');
  const client = Client.create(join(dir, 'store.sqlite'));
  const paths = [join(dir, 'w1'), join(dir, 'w2')];
  try {
    const layer = (await client.initLayerStack({ name: 'p', source: src })).layer.id;
    client.forkBranch({ name: 'main', layer });
    const w1 = await client.createWorkspace('main', { at: paths[0]!, projection: 'fuse' });
    const w2 = await client.createWorkspace('main', { at: paths[1]!, projection: 'fuse' });
    const [p1, p2] = paths as [string, string];
    // w2's kernel caches everything it will be asked about.
    assert.equal(await readFile(join(p2, 'a.txt'), 'utf8'), 'one\n');
    assert.deepEqual(await readFile(join(p2, 'big.bin')), seededBytes(9, BIG));
    assert.equal((await lstat(join(p2, 'gone.txt'))).size, 5);
    assert.equal((await lstat(join(p2, 'old-name.txt'))).size, 6);
    await assert.rejects(lstat(join(p2, 'new-name.txt')), { code: 'ENOENT' }); // a cached negative entry
    assert.deepEqual((await readdir(join(p2, 'd'))).sort(), ['x.txt']);

    // The other Workspace changes all of that and lands first.
    await appendFile(join(p1, 'a.txt'), 'two\n');
    const patch = seededBytes(10, 8192);
    const fh = await open(join(p1, 'big.bin'), 'r+');
    await fh.write(patch, 0, patch.length, 300_000);
    await fh.close();
    await unlink(join(p1, 'gone.txt'));
    await rename(join(p1, 'old-name.txt'), join(p1, 'new-name.txt'));
    await writeFile(join(p1, 'd/y.txt'), 'y\n');
    assert.equal((await client.commitWorkspace(w1.id, { message: 'w1' })).outcome, 'Created');

    // w2 commits its own change: reconciled onto w1's Commit.
    await writeFile(join(p2, 'w2.txt'), 'w2\n');
    const r = await client.commitWorkspace(w2.id, { message: 'w2' });
    assert.ok(r.outcome === 'Created' && r.reconciled, `reconciled: ${r.outcome}`);
    assert.equal(await readFile(join(p2, 'a.txt'), 'utf8'), 'one\ntwo\n', 'new size and bytes');
    const big = Buffer.from(seededBytes(9, BIG));
    patch.copy(big, 300_000);
    assert.deepEqual(await readFile(join(p2, 'big.bin')), big, 'cached pages of a same-size file');
    await assert.rejects(lstat(join(p2, 'gone.txt')), { code: 'ENOENT' });
    await assert.rejects(lstat(join(p2, 'old-name.txt')), { code: 'ENOENT' });
    assert.equal(await readFile(join(p2, 'new-name.txt'), 'utf8'), 'moved\n');
    assert.deepEqual((await readdir(join(p2, 'd'))).sort(), ['x.txt', 'y.txt']);
    assert.deepEqual((await readdir(p2)).sort(), ['a.txt', 'big.bin', 'd', 'new-name.txt', 'w2.txt']);

    // The Branch moves again; w2, unchanged, moves onto it when it commits (UpToDate).
    assert.equal((await stat(join(p1, 'a.txt'))).size, 8);
    await writeFile(join(p1, 'a.txt'), 'three\n');
    assert.equal((await client.commitWorkspace(w1.id, { message: 'w1 again' })).outcome, 'Created');
    assert.equal((await client.commitWorkspace(w2.id)).outcome, 'UpToDate');
    assert.equal(await readFile(join(p2, 'a.txt'), 'utf8'), 'three\n', 'moved onto the new head');
    for (const w of [w1, w2]) await client.endWorkspace(w.id, { discard: true });
    assertIntact(client);
  } finally {
    await client.stopDaemon({ discard: true }).catch(() => {});
    for (const p of paths) await detachStale(p).catch(() => false);
    client.close();
  }
});
