// Lint exists mainly to hold the architecture: code tiers depend one way
// (native ← store ← history ← remote ← workspace ← fuse ← sdk ← cli; errors, format, monitor are leaves),
// only one folder may touch each foreign engine (SQLite, FUSE, the addon loader), and units stay
// small enough to read in a sitting (limits and their reasons: docs/DECISIONS.md). Import cycles
// are checked by scripts/lint-cycles.mjs and C++ sizes by scripts/lint-cpp.mjs (`npm run lint`).
import tseslint from 'typescript-eslint';

// ---------------------------------------------------------------------------------------------
// ALLOWANCES: files allowed over a limit while their split lands in steps (none today). A listed
// rule only warns for the listed file. Never raise a limit to fit a file, and never list a file
// you can split now.
// Rules: 'max-lines', 'max-lines-per-function', 'complexity' (eslint), 'import-cycle'
// (scripts/lint-cycles.mjs: a cycle through the file), 'cpp' (scripts/lint-cpp.mjs).
// ---------------------------------------------------------------------------------------------
export const allowances = {};
// ---------------------------------------------------------------------------------------------

// Counted so that comments saying why never push a unit over (docs/DECISIONS.md).
const sizeRules = {
  'max-lines': ['error', { max: 500, skipBlankLines: false, skipComments: false }],
  'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
  complexity: ['error', 25],
};

const tiers = ['native', 'store', 'history', 'remote', 'workspace', 'fuse', 'sdk', 'cli'];
const leaves = ['errors', 'format', 'monitor'];
const engines = {
  'better-sqlite3': 'store',
  'node-gyp-build': 'native',
  pg: 'remote',
  pgpass: 'remote',
  'pg-connection-string': 'remote',
};

function above(tier) {
  return tiers.slice(tiers.indexOf(tier) + 1);
}

function restrictionsFor(folder) {
  // errors is the innermost leaf; format and monitor may use it, and nothing else of ours.
  const banned = folder === 'errors' ? tiers.concat(leaves.filter((l) => l !== folder)) : leaves.includes(folder) ? tiers.concat(leaves.filter((l) => l !== folder && l !== 'errors')) : above(folder);
  // The CLI talks to the product only through the SDK.
  const extra = folder === 'cli' ? tiers.filter((l) => l !== 'sdk' && l !== 'cli').concat(leaves) : [];
  const patterns = [...new Set([...banned, ...extra])].flatMap((l) => [
    { group: [`../${l}/*`, `../../${l}/*`, `../../../${l}/*`, `../${l}.js`, `../../${l}.js`], message: `lib/${folder} may not depend on lib/${l} (code tiers depend one way; see docs/ARCHITECTURE.md).` },
  ]);
  const paths = Object.entries(engines)
    .filter(([, owner]) => owner !== folder)
    .map(([name, owner]) => ({ name, message: `only lib/${owner} may import ${name}.` }));
  return ['error', { patterns, paths }];
}

// Durations and deadlines run on the monotonic clock: the wall clock steps (NTP, a resume from
// suspend), which cut a wait short or stretched it by the step. Date.now() stays for the times
// that are stored or compared with files' times, never in arithmetic of its own.
const wallClockArithmetic = {
  selector: "BinaryExpression > CallExpression[callee.object.name='Date'][callee.property.name='now']",
  message: 'durations and deadlines use performance.now() (the wall clock steps); keep Date.now() for stored times.',
};

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'prebuilds/**', 'bench/.fixtures/**', 'bench/.out/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  ...[...tiers, ...leaves].map((folder) => ({
    files: [`lib/${folder}/**/*.ts`, `lib/${folder}.ts`],
    rules: { 'no-restricted-imports': restrictionsFor(folder) },
  })),
  { files: ['lib/**/*.ts'], rules: { 'no-restricted-syntax': ['error', wallClockArithmetic] } },
  {
    // The tiers above the tables' owners reach rows only through the owners' functions
    // (scripts/lint-tables.mjs checks the SQL; this keeps them off the connection itself).
    files: ['lib/fuse/**/*.ts', 'lib/sdk/**/*.ts', 'lib/cli/**/*.ts'],
    rules: {
      'no-restricted-syntax': ['error', wallClockArithmetic, { selector: "MemberExpression[property.name='db']", message: 'no SQLite connection above lib/workspace: call a function of the folder that owns the table (docs/ARCHITECTURE.md).' }],
    },
  },
  {
    // Tests and benchmarks may reach any tier, but never the foreign engines directly,
    // except where a test must corrupt a Store on purpose.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  // Tests are long lists of cases by nature; they are held to no import cycles only.
  { files: ['lib/**/*.ts', 'bench/**/*.ts'], rules: sizeRules },
  ...Object.entries(allowances)
    .filter(([file]) => file.endsWith('.ts'))
    .map(([file, rules]) => ({
      files: [file],
      rules: Object.fromEntries(rules.filter((r) => r in sizeRules).map((r) => [r, ['warn', ...sizeRules[r].slice(1)]])),
    })),
);
