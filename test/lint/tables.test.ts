/**
 * scripts/lint-tables.mjs: SQL naming a table fails outside the folder that owns it (every table
 * of the schema has one), so does SQL whose table is interpolated; prose, the owner's own SQL
 * and the fixture builders pass, and the repository itself is clean.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain .mjs script without declarations
import { OWNERS, unowned, violations } from '../../scripts/lint-tables.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
type Violation = { file: string; line: number; table: string | null; owner: string | null };
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

test('every tier is held to its own tables: store, history, remote and workspace', () => {
  assert.deepEqual(check('lib/sdk/x.ts', "db.prepare('SELECT head_layer_id FROM layer_stacks WHERE name = ?')"), ['lib/sdk/x.ts:1:layer_stacks']);
  assert.deepEqual(check('lib/store/x.ts', "db.prepare('SELECT count(*) FROM layers')"), ['lib/store/x.ts:1:layers']);
  assert.deepEqual(check('lib/history/x.ts', "db.prepare('SELECT count(*) FROM objects')"), ['lib/history/x.ts:1:objects']);
  assert.deepEqual(check('lib/remote/x.ts', "db.prepare('INSERT OR IGNORE INTO commits (id) VALUES (?)')"), ['lib/remote/x.ts:1:commits']);
  assert.deepEqual(check('lib/history/x.ts', "db.prepare('SELECT url FROM remotes')"), ['lib/history/x.ts:1:remotes']);
  assert.deepEqual(check('lib/cli/x.ts', "db.prepare('UPDATE branches SET head_commit_id = ?')"), ['lib/cli/x.ts:1:branches']);
  // The remote-tracking heads are history (they resolve as REMOTE/NAME and retention keeps them).
  assert.deepEqual(check('lib/history/x.ts', "db.prepare('SELECT head FROM remote_refs')"), []);
  assert.deepEqual(check('lib/remote/x.ts', "db.prepare('SELECT head FROM remote_refs')"), ['lib/remote/x.ts:1:remote_refs']);
  // PostgreSQL's schema of a remote is not the Store's.
  assert.deepEqual(check('lib/remote/x.ts', "conn.query('SELECT id FROM layerfs.layers WHERE id = $1')"), []);
});

test('only the owner asks for or makes a table made on first use', () => {
  assert.deepEqual(check('lib/remote/x.ts', "if (!store.hasTable('pins')) return [];"), ['lib/remote/x.ts:1:pins']);
  assert.deepEqual(check('lib/history/x.ts', "store.createTable('remotes');"), ['lib/history/x.ts:1:remotes']);
  assert.deepEqual(check('lib/remote/x.ts', "store.createTable('remotes');"), []);
  assert.deepEqual(check('lib/history/x.ts', "if (store.hasTable('pins')) x();"), []);
});

test('a table taken from an interpolation is refused anywhere, a column list is not', () => {
  const text = ["db.prepare(`SELECT root_id FROM ${kind === 'layer' ? 'layers' : 'commits'} WHERE id = ?`);", 'db.prepare(`SELECT id FROM main.${table} WHERE id BETWEEN ? AND ?`);'].join('\n');
  assert.deepEqual(check('lib/history/x.ts', text), ['lib/history/x.ts:1:null', 'lib/history/x.ts:2:null']);
  assert.deepEqual(check('lib/history/x.ts', 'db.prepare(`SELECT ${COLUMNS} FROM layers WHERE id = ?`);'), []);
});

test('every table the schema creates has exactly one owner', () => {
  assert.deepEqual(unowned(), []);
  const tables = Object.values(OWNERS as Record<string, string[]>).flat();
  assert.equal(new Set(tables).size, tables.length, 'a table listed under two owners');
});

test('the owner, the schema, comments and prose pass', () => {
  assert.deepEqual(check('lib/workspace/rows.ts', "db.prepare('SELECT id FROM workspaces')"), []);
  assert.deepEqual(check('lib/store/schema.ts', "const s = 'CREATE TABLE workspaces (id BLOB)';"), []);
  assert.deepEqual(check('bench/fixtures/x.ts', "db.prepare('INSERT INTO objects (id) VALUES (?)')"), []);
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
  assert.match(r.stdout, /tables' SQL only in its owner/);
});
