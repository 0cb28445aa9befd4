// The automatic spool mode's switch (native/spool_mode.h): with its threshold set below any real
// cost, the first large piece through the page cache counts as slow and the next goes O_DIRECT,
// and from then on the file mixes pieces of both ways (probes through the page cache, small and
// unaligned edits always buffered). Whatever the mix, the file reads back and commits exactly as
// written. spool-mode.test.ts checks the page-cache side.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT_SERIAL, Store } from '../../lib/store/index.js';
import { writeBehindModes } from '../../lib/native/index.js';
import { seededBytes } from '../helpers/tmp.js';
import { setupStore } from './helpers.js';
import { directDescriptors, fileSpooledOverlay } from './spool-helpers.js';

// Read by the addon at its first write-behind, after these imports.
process.env.LAYERFS_SPOOL_SLOW_NS_PER_MIB = '1';

test('automatic mode, page cache slow: pieces switch to O_DIRECT, probes stay buffered; read back and committed as written', async () => {
  assert.equal(process.env.LAYERFS_SPOOL_DIRECT, undefined, 'this file checks the automatic mode');
  const { dir, storePath, client } = await setupStore(() => {}, 'layerfs-spool-');
  const spoolDir = join(dir, 'spool');
  mkdirSync(spoolDir);
  const store = Store.open(storePath);
  try {
    const ov = fileSpooledOverlay(store, client, spoolDir);
    const { serial, fh } = ov.create(ROOT_SERIAL, Buffer.from('big.bin'), 0o644);
    const size = 40 << 20;
    const model = seededBytes(81, size);
    for (let pos = 0; pos < size; pos += 1 << 20) {
      ov.write(fh, model.subarray(pos, pos + (1 << 20)), pos);
      // Every fifth piece, an unaligned edit over what was just written (always buffered).
      if ((pos >> 20) % 5 === 4) {
        const edit = seededBytes(82 + (pos >> 20), 5000);
        ov.write(fh, edit, pos + 777);
        edit.copy(model, pos + 777);
      }
    }
    ov.flush(fh);
    const m = writeBehindModes();
    assert.ok(m.switches >= 1, `the mode switched (${JSON.stringify(m)})`);
    assert.ok(m.direct >= 1, `pieces went O_DIRECT (${JSON.stringify(m)})`);
    assert.ok(m.buffered >= 2, `the first piece and probes went through the page cache (${JSON.stringify(m)})`);
    assert.equal(m.direct + m.buffered, 40, 'every 1 MiB piece counted once');
    assert.equal(directDescriptors(spoolDir).length, 1, 'the spool has its O_DIRECT descriptor');
    // Reads of a file with O_DIRECT pieces go O_DIRECT through windows; its buffered pieces must show.
    const back = Buffer.alloc(size);
    for (let pos = 0; pos < size; pos += 64 << 10) assert.equal(ov.read(fh, back.subarray(pos), 64 << 10, pos), 64 << 10);
    assert.ok(back.equals(model), 'read back as written');
    ov.release(fh);
    assert.equal(ov.commitSync().outcome, 'Created');
    const ro = ov.open(serial, 0);
    const stored = Buffer.alloc(size);
    assert.equal(ov.read(ro, stored, size, 0), size);
    ov.release(ro);
    assert.ok(stored.equals(model), 'committed as written');
    assert.equal(client.verify().ok, true);
  } finally {
    store.close();
    client.close();
  }
});
