// Cell file of the init_namespace family: Import a tree of small files as a genesis Layer, against git and the tar read floor (bench/lib/import-tree-cell.ts).
//   node --import tsx bench/cells/init_namespace.ts --cell ID --tmp SCRATCH --tier T …  (the family gives the options)

import { defineCell, runIfMain } from '../lib/define-cell.js';
import { IMPORT_TREE } from '../lib/import-tree-cell.js';

export const importTree = defineCell({ ...IMPORT_TREE, file: import.meta.url });

runIfMain(import.meta.url, importTree);
