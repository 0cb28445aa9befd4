// Family edit_length_preserving: a 4 KiB overwrite at the head, middle and tail of a 1 / 10 /
// 100 / 500 MiB file in a materialized Workspace, each committed (see _edits.ts), against git.

import { LENGTH_PRESERVING_OPS } from '../lib/file-ops.js';
import { editFamily } from '../lib/edit-family.js';
import { fileEdits } from '../cells/edit_length_preserving.js';

export default editFamily({
  name: 'edit_length_preserving',
  cell: fileEdits,
  title: 'Edit a large file in place (4 KiB overwrite), then commit',
  order: 41,
  ops: LENGTH_PRESERVING_OPS,
  opsText: 'overwrite 4 KiB at offset 0 (head), at the middle (4 KiB-aligned) and at the last 4 KiB (tail)',
});
