// How spool pieces are written (native/spool_mode.h): in the automatic mode (the default) large
// aligned pieces go through the spool file's page cache while that stays fast, and the file reads
// back from memory. Here the threshold is set out of reach, so every piece must: the page-cache
// side of the mode (spool-mode-switch.test.ts forces the other; write-behind.test.ts covers
// $LAYERFS_SPOOL_DIRECT=1). And a large file deleted in a mount gives its spool's space (and page
// cache) back at once, not at the next commit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT_SERIAL } from '../../lib/store/index.js';
import { seededBytes } from '../helpers/tmp.js';
import { ok, setupStore, withMount } from './helpers.js';
import { assertWrittenAndCommitted, directDescriptors, withSpooledOverlay } from './spool-helpers.js';
import { writeBehindModes } from '../../lib/native/index.js';

// Read by the addon at its first write-behind, after these imports; the mount's daemon inherits it.
process.env.LAYERFS_SPOOL_SLOW_NS_PER_MIB = '1e15';

/** Bytes of `path` resident in the page cache (fincore, util-linux). */
function residentBytes(path: string): number {
  return Number(execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES', path], { encoding: 'utf8' }).trim());
}

test('automatic mode, page cache fast: large aligned pieces reach the spool through its page cache; read back and committed as written', async () => {
  assert.equal(process.env.LAYERFS_SPOOL_DIRECT, undefined, 'this file checks the automatic mode');
  await withSpooledOverlay('layerfs-spool-', (ov, spoolDir) => {
    const { serial, fh } = ov.create(ROOT_SERIAL, Buffer.from('big.bin'), 0o644);
    const size = 8 << 20;
    const model = seededBytes(71, size);
    for (let pos = 0; pos < size; pos += 1 << 20) ov.write(fh, model.subarray(pos, pos + (1 << 20)), pos);
    ov.flush(fh);
    assert.deepEqual(writeBehindModes(), { direct: 0, buffered: 8, switches: 0 });
    assert.deepEqual(directDescriptors(spoolDir), [], 'no O_DIRECT descriptor on the spool');
    const files = readdirSync(spoolDir).filter((f) => !f.startsWith('.'));
    assert.equal(files.length, 1, 'one spool file');
    assert.equal(residentBytes(join(spoolDir, files[0]!)), size, 'every written page is in the page cache');
    assertWrittenAndCommitted(ov, serial, fh, model);
  });
});

test('a large file deleted in a mount has its spool file removed within seconds, with no commit or status', async () => {
  const s = await setupStore(() => {});
  try {
    await withMount(s, async (m) => {
      const spool = join(`${s.storePath}.d`, 'spool');
      const spoolFiles = () => readdirSync(spool).flatMap((ws) => readdirSync(join(spool, ws)).map((f) => join(spool, ws, f)));
      const big = () => spoolFiles().filter((f) => existsSync(f) && statSync(f).size > 0);
      await ok('dd', ['if=/dev/urandom', `of=${join(m.path, 'big.bin')}`, 'bs=1M', 'count=16', 'status=none']);
      assert.equal(big().length, 1, 'the written file has a spool file');
      await ok('rm', [join(m.path, 'big.bin')]);
      const t0 = Date.now();
      while (big().length > 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(big(), [], 'the deleted file\'s spool is gone');
    });
  } finally {
    s.client.close();
  }
});
