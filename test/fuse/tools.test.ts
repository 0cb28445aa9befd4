// Ordinary programs in child processes against a mounted Workspace, compared
// with the same steps on a plain directory: git, tar and sqlite3. Then commit, mount the Commit
// afresh, compare again.
import { test } from 'node:test';
import { gitScenario, sqliteScenario, tarScenario } from './scenarios.js';

test('git init/add/commit/status/checkout/log in a mount equals a plain directory', () => gitScenario());
test('extracting and re-creating a real tar archive in a mount equals a plain directory, mtimes included', () => tarScenario());
test('sqlite3 writes a database inside the mount like on a plain directory', () => sqliteScenario());
