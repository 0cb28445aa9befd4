// Cell file of the edit_length_changing family: Length-changing 4 KiB edits of a large file in a materialized Workspace, each committed, against git (bench/lib/file-edits-cell.ts).
//   node --import tsx bench/cells/edit_length_changing.ts --cell ID --tmp SCRATCH --tier T …  (the family gives the options)

import { defineCell, runIfMain } from '../lib/define-cell.js';
import { FILE_EDITS } from '../lib/file-edits-cell.js';

export const lengthChangingEdits = defineCell({ ...FILE_EDITS, file: import.meta.url });

runIfMain(import.meta.url, lengthChangingEdits);
