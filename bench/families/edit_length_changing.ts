// Family edit_length_changing: append, insert, delete, prepend, truncate and zero-extend by
// 4 KiB on a 1 / 10 / 100 / 500 MiB file in a materialized Workspace, each committed (see
// _edits.ts), against git. Insert, delete and prepend shift every later byte: content-defined
// chunking should still re-store only the chunks around the edit.

import { LENGTH_CHANGING_OPS } from '../lib/file-ops.js';
import { editFamily } from '../lib/edit-family.js';
import { lengthChangingEdits } from '../cells/edit_length_changing.js';

export default editFamily({
  name: 'edit_length_changing',
  cell: lengthChangingEdits,
  title: 'Change the length of a large file by 4 KiB, then commit',
  order: 42,
  ops: LENGTH_CHANGING_OPS,
  opsText:
    'append 4 KiB; insert 4 KiB at the middle; delete 4 KiB at the middle; prepend 4 KiB; truncate the ' +
    'last 4 KiB; zero-extend by 4 KiB (ftruncate, a hole)',
});
