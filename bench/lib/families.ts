// Family discovery: every bench/families/*.ts (not starting with "_") default-exports a Family.
// Adding a family is adding one file; the runner needs no edit.

import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { FAMILIES_DIR } from './paths.js';
import type { Family } from './types.js';

function isFamily(x: unknown): x is Family {
  const f = x as Partial<Family> | null;
  return f !== null && typeof f === 'object' && typeof f.name === 'string' && typeof f.tiers === 'function' && typeof f.run === 'function';
}

export async function loadFamilies(dir: string = FAMILIES_DIR): Promise<Family[]> {
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.startsWith('_') && !f.endsWith('.d.ts'))
    .sort();
  const families: Family[] = [];
  for (const f of files) {
    const mod = (await import(pathToFileURL(path.join(dir, f)).href)) as { default?: unknown };
    if (!isFamily(mod.default)) throw new Error(`bench/families/${f} must default-export a Family`);
    families.push(mod.default);
  }
  const names = new Set<string>();
  for (const f of families) {
    if (names.has(f.name)) throw new Error(`two families named ${f.name}`);
    names.add(f.name);
  }
  return families.sort((a, b) => (a.order ?? 100) - (b.order ?? 100) || a.name.localeCompare(b.name));
}
