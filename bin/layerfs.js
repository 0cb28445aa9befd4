#!/usr/bin/env node
// The compiled CLI lives in dist/ (built by scripts/setup.sh in a checkout; shipped in the package).
import('../dist/lib/cli/start.js').then((m) => m.main(process.argv)).catch((e) => {
  console.error(e && e.code === 'ERR_MODULE_NOT_FOUND' ? `layerfs: not built (${e.message}); run npm run build:ts (scripts/setup.sh does)` : e);
  process.exit(70);
});
