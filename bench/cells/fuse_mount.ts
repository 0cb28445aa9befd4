// Cell file of the fuse_mount family: A FUSE Workspace against a plain directory, one operation per run (bench/lib/fuse-mount-cell.ts).
//   node --import tsx bench/cells/fuse_mount.ts --cell ID --tmp SCRATCH --tier T …  (the family gives the options)

import { defineCell, runIfMain } from '../lib/define-cell.js';
import { FUSE_MOUNT } from '../lib/fuse-mount-cell.js';

export const fuseMountCell = defineCell({ ...FUSE_MOUNT, file: import.meta.url });

runIfMain(import.meta.url, fuseMountCell);
