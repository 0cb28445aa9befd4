// Cell file of the dedup_cdc_locality family: Dedup of N variants of a 1 MiB reference (bench/lib/dedup-trees-cell.ts), layerfs against git.
//   node --import tsx bench/cells/dedup_cdc_locality.ts --cell ID --tmp SCRATCH --tier T …  (the family gives the options)

import { defineCell, runIfMain } from '../lib/define-cell.js';
import { DEDUP_TREES } from '../lib/dedup-trees-cell.js';

export const dedupTrees = defineCell({ ...DEDUP_TREES, file: import.meta.url });

runIfMain(import.meta.url, dedupTrees);
