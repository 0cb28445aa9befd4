// Cell file of the dedup_cross_file family: N files identical, unique, mixed or half-shared (bench/lib/dedup-trees-cell.ts: the same measurement as dedup_cdc_locality, other trees), layerfs against git.
//   node --import tsx bench/cells/dedup_cross_file.ts --cell ID --tmp SCRATCH --tier T …  (the family gives the options)

import { defineCell, runIfMain } from '../lib/define-cell.js';
import { DEDUP_TREES } from '../lib/dedup-trees-cell.js';

export const dedupCrossFile = defineCell({ ...DEDUP_TREES, file: import.meta.url });

runIfMain(import.meta.url, dedupCrossFile);
