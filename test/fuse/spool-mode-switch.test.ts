// The automatic spool mode's switch (native/spool_mode.h): with its threshold set below any real
// cost, the first large piece through the page cache counts as slow and the next goes O_DIRECT,
// and from then on the file mixes pieces of both ways (probes through the page cache, small and
// unaligned edits always buffered). Whatever the mix, the file reads back and commits exactly as
// written. spool-mode.test.ts checks the page-cache side.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROOT_SERIAL } from '../../lib/store/index.js';
import { writeBehindModes } from '../../lib/native/index.js';
import { seededBytes } from '../helpers/tmp.js';
import { assertWrittenAndCommitted, directDescriptors, withSpooledOverlay } from './spool-helpers.js';

// Read by the addon at its first write-behind, after these imports.
process.env.LAYERFS_SPOOL_SLOW_NS_PER_MIB = '1';

test('automatic mode, page cache slow: pieces switch to O_DIRECT, probes stay buffered; read back and committed as written', async () => {
  assert.equal(process.env.LAYERFS_SPOOL_DIRECT, undefined, 'this file checks the automatic mode');
  await withSpooledOverlay('layerfs-spool-', (ov, spoolDir) => {
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
    // Reads of a file with O_DIRECT pieces go O_DIRECT through windows, 64 KiB at a time here;
    // its buffered pieces must show.
    const back = Buffer.alloc(size);
    for (let pos = 0; pos < size; pos += 64 << 10) assert.equal(ov.read(fh, back.subarray(pos), 64 << 10, pos), 64 << 10);
    assert.ok(back.equals(model), 'read back in pieces as written');
    assertWrittenAndCommitted(ov, serial, fh, model);
  });
});
