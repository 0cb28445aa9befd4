#!/usr/bin/env node
// After `tsc -p tsconfig.build.json`: dist/lib/cli/plain-cat-entry.js, the module a plain
// `layerfs cat` loads, becomes one file with every module of ours it reaches (esbuild, a
// devDependency: the published package ships the result, never runs esbuild). Packages stay
// imports (resolved from dist/ as before), node: modules stay node: imports. The bundle is
// written where the entry was, so import.meta.url (the addon's loader walks up from it to the
// package root) names the same directory depth. A dynamic import inside the bundled modules
// stays a dynamic import of the compiled module, its specifier made relative to the bundle.
import { build } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// The compiled tree: dist/ of this checkout, or the directory given (test/cli/cat-bundle.test.ts).
const dist = process.argv[2] ? resolve(process.argv[2]) : fileURLToPath(new URL('../dist', import.meta.url));
const entry = resolve(dist, 'lib/cli/plain-cat-entry.js');
const outdir = dirname(entry);

const keepDynamic = {
  name: 'keep-dynamic-imports',
  setup(b) {
    b.onResolve({ filter: /^\./ }, (args) => {
      if (args.kind !== 'dynamic-import') return undefined;
      let path = relative(outdir, resolve(args.resolveDir, args.path));
      if (!path.startsWith('.')) path = `./${path}`;
      return { path, external: true };
    });
  },
};

const result = await build({
  entryPoints: [entry],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  write: false,
  outfile: entry,
  allowOverwrite: true,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  plugins: [keepDynamic],
});
const [out] = result.outputFiles;
const modules = Object.keys(result.metafile.inputs).length;
// The bundle stands alone: no static import of a module of ours is left in it.
const text = out.text;
const relativeImport = /^import[^'"]*['"]\.{1,2}\//m.exec(text);
if (relativeImport) throw new Error(`bundle-cat: ${relativeImport[0]} is left in the bundle`);
if (modules < 2) throw new Error(`bundle-cat: only ${modules} module bundled (${readFileSync(entry, 'utf8').slice(0, 80)})`);
writeFileSync(entry, text);
