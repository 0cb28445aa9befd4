// Cell file of the import_large family: Import one large random file as a genesis Layer, against git and the tar read floor (bench/lib/import-tree-cell.ts).
//   node --import tsx bench/cells/import_large.ts --cell ID --tmp SCRATCH --tier T …  (the family gives the options)

import { defineCell, runIfMain } from '../lib/define-cell.js';
import { IMPORT_TREE } from '../lib/import-tree-cell.js';

export const importLargeCell = defineCell({ ...IMPORT_TREE, file: import.meta.url });

runIfMain(import.meta.url, importLargeCell);
