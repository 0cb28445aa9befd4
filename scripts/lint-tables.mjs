#!/usr/bin/env node
// The folder that owns a table is the only one that writes SQL naming it (docs/ARCHITECTURE.md,
// "Who owns which table"); another folder reads or writes that table only by calling a function
// of its owner. A tier that ran SQL on another tier's table would depend on its layout, which the
// tier rule in eslint.config.js cannot see. Every string and template literal in lib/ and bench/
// is read (TypeScript parses them; comments and prose are not SQL), and it fails when
// - an SQL clause (FROM, JOIN, INTO, UPDATE, TABLE, REFERENCES) names a table outside its owner;
// - such a clause takes its table from an interpolation (`FROM ${table}`): nobody could tell
//   whose table it is, so each owner writes its own query (the prefix lookups take a callback);
// - a table of lib/store/schema.ts has no owner here (a new table needs one);
// - `hasTable('t')` or `createTable('t')` (tables made on first use) names a table outside its owner.
// A lower tier that needs an upper tier's rows takes them as an argument: retention gets the open
// Workspaces' bases from lib/workspace `workspaceRoots`, deletions ask `openWorkspacesOn`.
// lib/store/schema.ts declares every table (the format) and bench/fixtures/ builds Stores in bulk
// the way test/ helpers do, so both are exempt; test/ is not read (tests may check any table).
// Usage: node scripts/lint-tables.mjs [files...]   (default: every .ts under lib/ and bench/)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Owner folder → the tables only it may name in SQL (every table of lib/store/schema.ts). */
export const OWNERS = {
  'lib/store/': ['meta', 'packs', 'objects', 'dictionaries'],
  'lib/history/': ['layer_stacks', 'layers', 'branches', 'commits', 'checkpoints', 'tombstones', 'pins', 'retention', 'holds', 'fork_bases', 'pruned_commits', 'remote_refs'],
  'lib/remote/': ['remotes'],
  'lib/workspace/': ['workspaces', 'workspace_caches', 'workspace_entries', 'workspace_conflicts', 'sandboxes', 'workspace_sandboxes'],
};
const SCHEMA = 'lib/store/schema.ts';
const EXEMPT = [SCHEMA, 'bench/fixtures/'];
const root = fileURLToPath(new URL('..', import.meta.url));

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'node_modules' || name.startsWith('.') ? [] : walk(p);
    return name.endsWith('.ts') ? [p] : [];
  });
}

/** Each string and template piece of a file, with its line and whether an interpolation follows it. */
function literals(file, text) {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out = [];
  const visit = (n) => {
    // `store.hasTable('pins')`, `store.createTable('pins')` (a table made on first use): only the
    // table's owner asks for it or makes it, so the call counts as SQL naming the table.
    if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && ['hasTable', 'createTable'].includes(n.expression.name.text)) {
      const arg = n.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) out.push({ text: `TABLE ${arg.text}`, line: src.getLineAndCharacterOfPosition(n.getStart(src)).line + 1, beforeExpression: false });
    }
    if (ts.isStringLiteralLike(n) || ts.isTemplateLiteralToken(n)) {
      const beforeExpression = n.kind === ts.SyntaxKind.TemplateHead || n.kind === ts.SyntaxKind.TemplateMiddle;
      out.push({ text: n.text, line: src.getLineAndCharacterOfPosition(n.getStart(src)).line + 1, beforeExpression });
    }
    ts.forEachChild(n, visit);
  };
  visit(src);
  return out;
}

const CLAUSE = '\\b(FROM|JOIN|INTO|UPDATE|TABLE|REFERENCES)\\s+(?:(?:main|temp)\\.)?';
/** `FROM workspaces`, `UPDATE main.workspaces`, `REFERENCES workspaces(id)`: SQL naming `table`. */
const clause = (table) => new RegExp(`${CLAUSE}${table}\\b`);
/** A template piece that ends where the table should be: `SELECT id FROM ${table}`. */
const interpolatedTable = new RegExp(`${CLAUSE}$`);

/** Violations in one file: { file, line, table, owner } (owner null: the table is interpolated). */
export function violations(file, text) {
  const rel = relative(root, file).split(sep).join('/');
  if (EXEMPT.some((e) => rel === e || (e.endsWith('/') && rel.startsWith(e)))) return [];
  const lits = literals(file, text);
  const found = [];
  for (const lit of lits) if (lit.beforeExpression && interpolatedTable.test(lit.text)) found.push({ file: rel, line: lit.line, table: null, owner: null });
  for (const [owner, tables] of Object.entries(OWNERS)) {
    if (rel.startsWith(owner)) continue;
    const patterns = tables.map((t) => [t, clause(t)]);
    for (const lit of lits) {
      for (const [table, re] of patterns) if (re.test(lit.text)) found.push({ file: rel, line: lit.line, table, owner });
    }
  }
  return found;
}

/** Tables lib/store/schema.ts creates that no folder owns. */
export function unowned() {
  const text = readFileSync(join(root, SCHEMA), 'utf8');
  const owned = new Set(Object.values(OWNERS).flat());
  const created = [...text.matchAll(/CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+) \(/g)].map((m) => m[1]);
  return [...new Set(created)].filter((t) => !owned.has(t));
}

const message = (v) =>
  v.owner === null
    ? `${v.file}:${v.line}: error: SQL takes its table from an interpolation; write the query in the table's owner folder`
    : `${v.file}:${v.line}: error: SQL names the table ${v.table}, which ${v.owner} owns; call a function of ${v.owner} instead`;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = process.argv.length > 2 ? process.argv.slice(2).map((f) => join(process.cwd(), f)) : [...walk(join(root, 'lib')), ...walk(join(root, 'bench'))];
  const all = files.flatMap((f) => violations(f, readFileSync(f, 'utf8')));
  for (const v of all) console.error(message(v));
  const orphans = unowned();
  for (const t of orphans) console.error(`${SCHEMA}: error: the table ${t} has no owner folder in scripts/lint-tables.mjs OWNERS`);
  if (all.length > 0 || orphans.length > 0) {
    console.error(`lint-tables: ${all.length} place(s) write SQL for another folder's table, ${orphans.length} table(s) without an owner`);
    process.exit(1);
  }
  console.log(`lint-tables: ${files.length} files, each of ${Object.values(OWNERS).flat().length} tables' SQL only in its owner`);
}
