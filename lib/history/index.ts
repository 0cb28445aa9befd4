/** lib/history: LayerStacks, Layers (and later Branches, Commits, diff) over a Store. */
export * from './layerstacks.js';
export * from './rows.js';
export { layerId, commitId, uuidv7 } from './ids.js';
export { uniqueByPrefix } from './resolve.js';
