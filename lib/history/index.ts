/** lib/history: LayerStacks, Layers, Branches, Commits, Add and diff over a Store. */
export * from './layerstacks.js';
export * from './branches.js';
export * from './add.js';
export * from './rows.js';
export { layerId, commitId, uuidv7 } from './ids.js';
export { uniqueByPrefix } from './resolve.js';
export * from './diff.js';
export * from './tombstones.js';
export * from './retention.js';
