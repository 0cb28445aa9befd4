#!/usr/bin/env node
// Size and complexity limits for the C++ of native/ and fuzz/, the same limits eslint holds for the
// TypeScript (docs/DECISIONS.md, "Size and complexity limits"): a file at most 500 lines, a function
// body at most 80 lines of code (blank and comment-only lines not counted), a function's decision
// points (if, for, while, case, catch, &&, ||, ?) at most 25. No compiler is needed: comments and
// literals are blanked, then braces are matched; a brace whose header reads like a function
// signature opens a function, and everything nested in it (lambdas included) counts toward it.
// A file listed with 'cpp' in eslint.config.js `allowances` only warns.
// Usage: node scripts/lint-cpp.mjs [files...]   (default: every .cc/.h/.cpp/.hpp under native/ and fuzz/)
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { allowances } from '../eslint.config.js';

export const LIMITS = { fileLines: 500, functionLines: 80, complexity: 25 };
const root = fileURLToPath(new URL('..', import.meta.url));
const SOURCE = /\.(cc|cpp|h|hpp)$/;
const SKIP_DIRS = new Set(['corpus', 'findings', 'repro', 'build', 'node_modules']);

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return SKIP_DIRS.has(name) ? [] : walk(p);
    return SOURCE.test(name) ? [p] : [];
  });
}

/** The text with comments, string and char literals replaced by spaces (newlines kept). */
export function blank(src) {
  let out = '';
  for (let i = 0; i < src.length; ) {
    const c = src[i];
    const two = src.slice(i, i + 2);
    if (two === '//') {
      while (i < src.length && src[i] !== '\n') (out += ' '), i++;
    } else if (two === '/*') {
      const end = src.indexOf('*/', i + 2);
      const stop = end < 0 ? src.length : end + 2;
      out += src.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (c === 'R' && src[i + 1] === '"') {
      const open = src.indexOf('(', i);
      const delim = ')' + src.slice(i + 2, open) + '"';
      const end = src.indexOf(delim, open);
      const stop = end < 0 ? src.length : end + delim.length;
      out += src.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (c === '"' || (c === "'" && !/[0-9a-fA-F]/.test(src[i - 1] ?? ''))) {
      // A quote after a hex digit is a C++14 digit separator (1'000), not a char literal.
      let j = i + 1;
      while (j < src.length && src[j] !== c && src[j] !== '\n') j += src[j] === '\\' ? 2 : 1;
      out += ' '.repeat(j + 1 - i);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

const CONTROL = /^(if|for|while|switch|catch|do|else|try|return)\b/;
const SCOPE = /^(?:template\s*<.*>\s*)?(namespace|class|struct|union|enum|extern)\b/s;

/** What a `{` opens, judged by the text since the previous `;`, `{` or `}`. */
function kindOf(header) {
  const h = header.trim().replace(/^#.*$/gm, '').trim();
  if (SCOPE.test(h)) return /^(?:template\s*<.*>\s*)?enum\b/s.test(h) ? 'other' : 'scope';
  if (CONTROL.test(h) || h.endsWith('=') || h.endsWith(',') || h.endsWith('(') || h === '') return 'other';
  // A signature: a name, its parameter list, then qualifiers, a trailing return or an initializer list.
  if (/[\w~>\]]\s*\([^;]*\)\s*(const|noexcept|override|final|mutable|->[^{]*|:[^;]*|\s)*$/s.test(h)) return 'function';
  return 'other';
}

const DECISION = /\b(if|for|while|case|catch)\b|&&|\|\||\?/g;

/** Functions of one file: name, first line, code lines and decision points. */
export function functionsOf(text) {
  const code = blank(text);
  const stack = [];
  const found = [];
  let headerStart = 0;
  let fn = null;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (c === '{') {
      const inFunction = stack.includes('function');
      const kind = inFunction ? 'other' : kindOf(code.slice(headerStart, i));
      if (kind === 'function') {
        const header = code.slice(headerStart, i).trim();
        const name = /([\w:~]+)\s*\(/.exec(header)?.[1] ?? '(anonymous)';
        fn = { name, start: i, line: code.slice(0, i).split('\n').length };
      }
      stack.push(kind);
      headerStart = i + 1;
    } else if (c === '}') {
      const kind = stack.pop();
      if (kind === 'function' && fn) {
        const body = code.slice(fn.start, i + 1);
        const lines = body.split('\n').filter((l) => l.trim() !== '').length;
        const complexity = 1 + (body.match(DECISION) ?? []).length;
        found.push({ name: fn.name, line: fn.line, lines, complexity });
        fn = null;
      }
      headerStart = i + 1;
    } else if (c === ';') {
      headerStart = i + 1;
    }
  }
  return found;
}

export function lintFile(path) {
  const text = readFileSync(path, 'utf8');
  const problems = [];
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > LIMITS.fileLines) problems.push(`1: file has ${lines} lines (limit ${LIMITS.fileLines})`);
  for (const f of functionsOf(text)) {
    if (f.lines > LIMITS.functionLines) problems.push(`${f.line}: function '${f.name}' has ${f.lines} lines of code (limit ${LIMITS.functionLines})`);
    if (f.complexity > LIMITS.complexity) problems.push(`${f.line}: function '${f.name}' has a complexity of ${f.complexity} (limit ${LIMITS.complexity})`);
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const files = args.length > 0 ? args : ['native', 'fuzz'].flatMap((d) => walk(join(root, d)));
  let failed = 0;
  for (const file of files) {
    const name = relative(root, file);
    const allowed = allowances[name]?.includes('cpp');
    for (const p of lintFile(file)) {
      if (allowed) {
        console.warn(`warning (allowance): ${name}:${p}`);
      } else {
        console.error(`error: ${name}:${p}`);
        failed++;
      }
    }
  }
  if (failed > 0) {
    console.error(`lint-cpp: ${failed} problem(s); split the function or file (limits in docs/DECISIONS.md)`);
    process.exit(1);
  }
  console.log(`lint-cpp: ${files.length} C++ files within limits`);
}
