// Cell file of the fuse_kernel_features family: One kernel feature A/B (--ab FEATURE): the fuse_mount operations on two Stores, one daemon each (bench/lib/fuse-mount-cell.ts).
//   node --import tsx bench/cells/fuse_kernel_features.ts --cell ID --tmp SCRATCH --tier T …  (the family gives the options)

import { defineCell, runIfMain } from '../lib/define-cell.js';
import { FUSE_MOUNT } from '../lib/fuse-mount-cell.js';

export const fuseKernelFeaturesCell = defineCell({ ...FUSE_MOUNT, file: import.meta.url });

runIfMain(import.meta.url, fuseKernelFeaturesCell);
