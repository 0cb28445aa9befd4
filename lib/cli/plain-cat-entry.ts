/**
 * What a plain `layerfs cat STATE PATH` loads (start.ts): in dist/ this module is replaced by one
 * file holding it and every module of ours it reaches (scripts/bundle-cat.mjs, run by
 * `npm run build:ts`), because loading ~55 small ES modules cost a pipeline's `cat` more CPU than
 * reading one bundled file (docs/DECISIONS.md, "A plain `cat` runs from one bundled file").
 * Packages (better-sqlite3, lru-cache) stay imports of their own. Run from sources (tsx) it is an
 * ordinary module.
 */
export { runPlainCat } from './commands/cat.js';
