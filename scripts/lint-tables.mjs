#!/usr/bin/env node
// The folder that owns a table is the only one that writes SQL for it (docs/ARCHITECTURE.md, "Who
// owns which table"): a tier that reads another tier's table depends on its layout, which the
// tier rule in eslint.config.js cannot see. Every string and template literal in lib/ and bench/
// is read (TypeScript parses them; comments and prose are not SQL) and an SQL clause naming an
// owned table (FROM, JOIN, INTO, UPDATE, TABLE, REFERENCES) fails outside its owner. The other
// tiers get what they need by calling the owner: retention takes the open Workspaces' bases as an
// argument (lib/workspace `workspaceRoots`), deletions ask `openWorkspacesOn`.
// lib/store/schema.ts declares every table (the format), so it is exempt.
// Usage: node scripts/lint-tables.mjs [files...]   (default: every .ts under lib/ and bench/)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** Owner folder → the tables only it may name in SQL. */
export const OWNERS = {
  'lib/workspace/': ['workspaces', 'workspace_caches', 'workspace_entries', 'workspace_conflicts', 'sandboxes', 'workspace_sandboxes'],
};
const EXEMPT = new Set(['lib/store/schema.ts']);
const root = fileURLToPath(new URL('..', import.meta.url));

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === 'node_modules' || name.startsWith('.') ? [] : walk(p);
    return name.endsWith('.ts') ? [p] : [];
  });
}

/** Each string, template head/middle/tail and untagged template piece of a file, with its line. */
function literals(file, text) {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out = [];
  const visit = (n) => {
    if (ts.isStringLiteralLike(n) || ts.isTemplateLiteralToken(n)) out.push({ text: n.text, line: src.getLineAndCharacterOfPosition(n.getStart(src)).line + 1 });
    ts.forEachChild(n, visit);
  };
  visit(src);
  return out;
}

/** `FROM workspaces`, `UPDATE main.workspaces`, `REFERENCES workspaces(id)`: SQL naming `table`. */
const clause = (table) => new RegExp(`\\b(FROM|JOIN|INTO|UPDATE|TABLE|REFERENCES)\\s+(?:(?:main|temp)\\.)?${table}\\b`);

/** Violations in one file: { file, line, table, owner }. */
export function violations(file, text) {
  const rel = relative(root, file).split(sep).join('/');
  if (EXEMPT.has(rel)) return [];
  const found = [];
  for (const [owner, tables] of Object.entries(OWNERS)) {
    if (rel.startsWith(owner)) continue;
    const patterns = tables.map((t) => [t, clause(t)]);
    for (const lit of literals(file, text)) {
      for (const [table, re] of patterns) if (re.test(lit.text)) found.push({ file: rel, line: lit.line, table, owner });
    }
  }
  return found;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = process.argv.length > 2 ? process.argv.slice(2).map((f) => join(process.cwd(), f)) : [...walk(join(root, 'lib')), ...walk(join(root, 'bench'))];
  const all = files.flatMap((f) => violations(f, readFileSync(f, 'utf8')));
  for (const v of all) console.error(`${v.file}:${v.line}: error: SQL names the table ${v.table}, which ${v.owner} owns; call a function of ${v.owner} instead`);
  if (all.length > 0) {
    console.error(`lint-tables: ${all.length} place(s) write SQL for another folder's table`);
    process.exit(1);
  }
  console.log(`lint-tables: ${files.length} files, each table's SQL only in its owner`);
}
