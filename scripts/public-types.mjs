#!/usr/bin/env node
// After `tsc -p tsconfig.build.json`: the published declarations must stand on their own, so a
// consumer type-checks them (skipLibCheck: false) with no types but Node's. The one package type
// they would name, better-sqlite3's connection (the Store's internal `Db`), becomes an opaque
// interface; then every import of every .d.ts in dist/ must be relative or `node:`.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../dist', import.meta.url));
const storeDts = join(dist, 'lib/store/store-file.d.ts');
const text = readFileSync(storeDts, 'utf8');
const opaque = text
  .replace(/^import Database from 'better-sqlite3';\n/m, '')
  .replace(/^export type Db = Database\.Database;$/m, '/** The Store\'s SQLite connection: internal, opaque to users of the package. */\nexport interface Db {\n    readonly open: boolean;\n}');
if (opaque.includes('Database')) throw new Error(`public-types: ${storeDts} still names better-sqlite3's types`);
writeFileSync(storeDts, opaque);

// What a consumer's tsc reads: the declarations reachable from the package's entry point.
const bad = [];
const seen = new Set();
const visit = (file) => {
  if (seen.has(file)) return;
  seen.add(file);
  for (const m of readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*'([^']+)'/g)) {
    const spec = m[1];
    if (spec.startsWith('.')) visit(join(dirname(file), spec.replace(/\.js$/, '.d.ts')));
    else if (!spec.startsWith('node:')) bad.push(`${file}: ${spec}`);
  }
};
visit(join(dist, 'lib/sdk/index.d.ts'));
if (bad.length) {
  console.error(`public-types: declarations import packages a consumer may not have:\n${bad.join('\n')}`);
  process.exit(1);
}
