// Command-line parsing shared by the cells. Every cell takes --tier (the label on its JSON line),
// most take --dir (the fixture) and --tmp (its scratch directory); each adds its own options.

import { parseArgs, type ParseArgsConfig } from 'node:util';
import { editSet, treeParams, type Edit, type EditOptions } from '../fixtures/tree.js';

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

const COMMON = {
  dir: { type: 'string' },
  tmp: { type: 'string' },
  tier: { type: 'string', default: '?' },
} as const;

/** Options of the cells that edit an N-file tree fixture (see treeEdits). */
export const TREE_EDIT_OPTIONS = {
  files: { type: 'string' },
  edits: { type: 'string', default: '10' },
  'edit-bytes': { type: 'string', default: '64' },
  'edit-mode': { type: 'string', default: 'mixed' },
  seed: { type: 'string', default: '1' },
} as const;

/** Options of the Branch development cells (git and layerfs do the same history). */
export const BRANCH_DEV_OPTIONS = {
  files: { type: 'string' },
  trunk: { type: 'string', default: '10' },
  'fork-at': { type: 'string', default: '5' },
  'branch-commits': { type: 'string', default: '10' },
} as const;

/** Options of the multi-Workspace cells. */
export const MULTI_WS_OPTIONS = {
  files: { type: 'string' },
  workers: { type: 'string', default: '2' },
  commits: { type: 'string', default: '20' },
} as const;

/** Options of the dedup cells that import cached variant trees. */
export const DEDUP_TREE_OPTIONS = {
  n: { type: 'string' },
  ref: { type: 'string' },
  case: { type: 'string', multiple: true },
} as const;

/** This process's options: --dir, --tmp, --tier and the cell's own. */
export function cellArgs<T extends OptionsConfig>(own: T): ReturnType<typeof parseArgs<{ options: typeof COMMON & T }>>['values'] {
  return parseArgs({ options: { ...COMMON, ...own } }).values;
}

/** "--dir, --tmp and --files are required" unless every option named was given. */
export function requireArgs<V extends object, K extends keyof V & string>(values: V, names: K[]): asserts values is V & { [P in K]-?: NonNullable<V[P]> } {
  const missing = names.filter((n) => {
    const v = values[n] as unknown;
    return v === undefined || (Array.isArray(v) && v.length === 0);
  });
  if (missing.length === 0) return;
  const flags = names.map((n) => `--${n}`);
  const list = flags.length === 1 ? flags[0] : `${flags.slice(0, -1).join(', ')} and ${flags[flags.length - 1]}`;
  throw new Error(`${list} ${flags.length === 1 ? 'is' : 'are'} required`);
}

/** The seeded edit set the TREE_EDIT_OPTIONS describe (the same for every tool). */
export function treeEdits(a: { files: string; edits: string; 'edit-bytes': string; 'edit-mode': string; seed: string }): Edit[] {
  return editSet(treeParams(Number(a.files)), {
    k: Number(a.edits),
    seed: Number(a.seed),
    mode: a['edit-mode'] as EditOptions['mode'],
    editBytes: Number(a['edit-bytes']),
  });
}
