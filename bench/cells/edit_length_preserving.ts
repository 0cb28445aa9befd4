// Cell file of the edit_length_preserving family: 4 KiB overwrites of a large file in a materialized Workspace, each committed, against git (bench/lib/file-edits-cell.ts).
//   node --import tsx bench/cells/edit_length_preserving.ts --cell ID --tmp SCRATCH --tier T …  (the family gives the options)

import { defineCell, runIfMain } from '../lib/define-cell.js';
import { FILE_EDITS } from '../lib/file-edits-cell.js';

export const fileEdits = defineCell({ ...FILE_EDITS, file: import.meta.url });

runIfMain(import.meta.url, fileEdits);
