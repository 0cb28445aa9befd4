// Lint exists mainly to hold the architecture: layers depend one way
// (native ← store ← history ← remote ← workspace ← mount ← sdk ← cli; errors, format, monitor are leaves),
// and only one folder may touch each foreign engine (SQLite, FUSE, the addon loader).
import tseslint from 'typescript-eslint';

const layers = ['native', 'store', 'history', 'remote', 'workspace', 'mount', 'sdk', 'cli'];
const leaves = ['errors', 'format', 'monitor'];
const engines = {
  'better-sqlite3': 'store',
  'fuse-native': 'mount',
  'node-gyp-build': 'native',
  pg: 'remote',
  pgpass: 'remote',
  'pg-connection-string': 'remote',
};

function above(layer) {
  return layers.slice(layers.indexOf(layer) + 1);
}

function restrictionsFor(folder) {
  // errors is the innermost leaf; format and monitor may use it, and nothing else of ours.
  const banned = folder === 'errors' ? layers.concat(leaves.filter((l) => l !== folder)) : leaves.includes(folder) ? layers.concat(leaves.filter((l) => l !== folder && l !== 'errors')) : above(folder);
  // The CLI talks to the product only through the SDK.
  const extra = folder === 'cli' ? layers.filter((l) => l !== 'sdk' && l !== 'cli').concat(leaves) : [];
  const patterns = [...new Set([...banned, ...extra])].flatMap((l) => [
    { group: [`../${l}/*`, `../../${l}/*`, `../../../${l}/*`, `../${l}.js`, `../../${l}.js`], message: `lib/${folder} may not depend on lib/${l} (layers depend one way; see docs/DESIGN.md).` },
  ]);
  const paths = Object.entries(engines)
    .filter(([, owner]) => owner !== folder)
    .map(([name, owner]) => ({ name, message: `only lib/${owner} may import ${name}.` }));
  return ['error', { patterns, paths }];
}

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'prebuilds/**', 'bench/.fixtures/**', 'bench/.out/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  ...[...layers, ...leaves].map((folder) => ({
    files: [`lib/${folder}/**/*.ts`, `lib/${folder}.ts`],
    rules: { 'no-restricted-imports': restrictionsFor(folder) },
  })),
  {
    // Tests and benchmarks may reach any layer, but never the foreign engines directly,
    // except where a test must corrupt a Store on purpose.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
);
