/**
 * scripts/lint-tables.mjs: SQL naming a Workspace table fails outside lib/workspace/, prose and
 * the owner's own SQL pass, and the repository itself is clean.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain .mjs script without declarations
import { violations } from '../../scripts/lint-tables.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
type Violation = { file: string; line: number; table: string; owner: string };
const check = (rel: string, text: string) => (violations(join(root, rel), text) as Violation[]).map((v) => `${v.file}:${v.line}:${v.table}`);

test('SQL naming an owned table outside its owner is found, with file, line and table', () => {
  const text = [
    "const a = db.prepare('SELECT id, base_root_id FROM workspaces');",
    'const b = db.prepare(`DELETE FROM main.workspace_entries WHERE workspace_id = ${x}`);',
    "const c = 'UPDATE workspaces SET state = ?';",
    "const d = `SELECT 1 FROM branches JOIN workspaces ON workspaces.branch_id = branches.id`;",
  ].join('\n');
  assert.deepEqual(check('lib/history/x.ts', text), ['lib/history/x.ts:1:workspaces', 'lib/history/x.ts:2:workspace_entries', 'lib/history/x.ts:3:workspaces', 'lib/history/x.ts:4:workspaces']);
  assert.deepEqual(check('bench/cells/x.ts', "q('INSERT INTO sandboxes (id) VALUES (?)')"), ['bench/cells/x.ts:1:sandboxes']);
});

test('the owner, the schema, comments and prose pass', () => {
  assert.deepEqual(check('lib/workspace/rows.ts', "db.prepare('SELECT id FROM workspaces')"), []);
  assert.deepEqual(check('lib/store/schema.ts', "const s = 'CREATE TABLE workspaces (id BLOB)';"), []);
  const prose = [
    '// read FROM workspaces in a comment is not SQL',
    "throw new Error(`Branch ${name} has open Workspaces: ${ids}`);",
    "const t = 'workspaces';",
  ].join('\n');
  assert.deepEqual(check('lib/history/x.ts', prose), []);
});

test('the repository passes lint-tables', () => {
  const r = spawnSync(process.execPath, [join(root, 'scripts/lint-tables.mjs')], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /each table's SQL only in its owner/);
});
