#!/usr/bin/env node
// No import cycles in lib/, bench/ or test/, type-only imports included: a cycle means two files
// cannot be read, tested or moved one without the other, and between tiers it hides a dependency
// the tier rule in eslint.config.js would refuse. dpdm parses the imports with TypeScript itself.
// A cycle through a file listed with 'import-cycle' in eslint.config.js `allowances` only warns.
import { parseCircular, parseDependencyTree } from 'dpdm';
import { allowances } from '../eslint.config.js';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const globs = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['lib/**/*.ts', 'bench/**/*.ts', 'test/**/*.ts'];
const tree = await parseDependencyTree(globs, { cwd: root, context: root, exclude: /node_modules|\.fixtures|\.out\//, transform: false });
const allowed = new Set(Object.entries(allowances).filter(([, rules]) => rules.includes('import-cycle')).map(([file]) => file));
let failed = 0;
for (const cycle of parseCircular(tree)) {
  const text = [...cycle, cycle[0]].join(' -> ');
  if (cycle.some((f) => allowed.has(f))) {
    console.warn(`warning (allowance): import cycle ${text}`);
  } else {
    console.error(`error: import cycle ${text}`);
    failed++;
  }
}
if (failed > 0) {
  console.error(`lint-cycles: ${failed} import cycle(s); move what both files need into a leaf module of the lower one`);
  process.exit(1);
}
console.log(`lint-cycles: ${Object.keys(tree).length} modules, no import cycles outside the allowances`);
