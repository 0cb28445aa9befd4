// One typed definition per cell: its id (the `cell` of its rows), its tool, its arguments, what
// it measures and the peers that do the same work with the same arguments. A cell file
// (bench/cells/<family>.ts) defines its cells with `defineCell` and ends with
// `runIfMain(import.meta.url, …cells)`; the runner starts it as `node <file> --cell ID --tier T …`
// (lib/run-cell.ts), and a family asks for a run with typed arguments (`ctx.runCell({ cell,
// args })`), so a misspelt option is a type error, not an empty column.
//
// A measurement returns its figures; this module prints the one JSON line of the cell protocol
// (bench/README.md): the figures on success, `{error}` with exit 1 on a throw, `{skipped}` when the
// measurement returned `{ skipped: why }`.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { emit, fail } from './cell.js';

export type CellOptions = NonNullable<ParseArgsConfig['options']>;

/** Options every cell takes: the fixture (--dir), its scratch directory (--tmp), the tier label. */
const COMMON = {
  dir: { type: 'string' },
  tmp: { type: 'string' },
  tier: { type: 'string', default: '?' },
} as const;

/** The parsed command line of a cell with options `O` (strings, booleans, string lists). */
export type CellValues<O extends CellOptions> = ReturnType<typeof parseArgs<{ options: typeof COMMON & O }>>['values'];

/** The same, with the options a cell requires known to be there. */
export type Given<O extends CellOptions, K extends keyof CellValues<O>> = CellValues<O> & { [P in K]-?: NonNullable<CellValues<O>[P]> };

type ArgValue<S> = S extends { type: 'boolean' } ? boolean : S extends { multiple: true } ? readonly string[] : string | number;

/** What a family passes to a cell (the runner adds --tier and --tmp). */
export type CellArgs<O extends CellOptions> = { dir?: string } & { [K in keyof O]?: ArgValue<O[K]> };

/** A measurement's figures: known keys become Row fields (lib/run-cell.ts), the rest Row.extra. */
export type CellResult = {
  ms?: number;
  maxRssMiB?: number;
  files?: number;
  bytes?: number;
  storeBytes?: number;
  objects?: number;
  value?: number;
  /** Set when the cell does not apply here (no FUSE, not root…): a skipped row, not an error. */
  skipped?: string;
} & Record<string, unknown>;

export interface Measure<O extends CellOptions, R extends CellResult = CellResult> {
  /** The cell's id in results and reports, e.g. 'layerfs-workspace-commit'. */
  id: string;
  /** Who does the work: 'layerfs', 'git', 'tar'…; the rows' tool unless the family names another. */
  tool: string;
  run(a: CellValues<O>, tier: string): Promise<R> | R;
}

export interface Cell<O extends CellOptions = CellOptions, R extends CellResult = CellResult> extends Measure<O, R> {
  /** The module that defines it (its import.meta.url), run as the cell's child process. */
  file: string;
  args: O;
  /** Options without which it cannot run (`--dir and --tmp are required`). */
  required: readonly string[];
  /** The same work by the tools it is compared with, same arguments (ratio columns). */
  peers: Cell<O>[];
}

export interface CellSpec<O extends CellOptions, R extends CellResult> extends Measure<O, R> {
  file: string;
  args?: O;
  required?: readonly (keyof CellValues<O> & string)[];
  peers?: Measure<O>[];
}

/**
 * A measurement that several families run, kept in bench/lib: each family's own cell file binds
 * it with `defineCell({ ...spec, file: import.meta.url })`, so a cell is always run from the file
 * named after its family. The identity function only fixes the option and result types.
 */
export function cellSpec<O extends CellOptions = Record<never, never>, R extends CellResult = CellResult>(spec: Omit<CellSpec<O, R>, 'file'>): Omit<CellSpec<O, R>, 'file'> {
  return spec;
}

export function defineCell<O extends CellOptions = Record<never, never>, R extends CellResult = CellResult>(spec: CellSpec<O, R>): Cell<O, R> {
  const args = spec.args ?? ({} as O);
  const required = spec.required ?? [];
  const peers = (spec.peers ?? []).map((p): Cell<O> => ({ ...p, file: spec.file, args, required, peers: [] }));
  return { id: spec.id, tool: spec.tool, run: spec.run, file: spec.file, args, required, peers };
}

/** A cell and its peers, in that order. */
export function withPeers(cell: Cell): Cell[] {
  return [cell, ...cell.peers];
}

/** The command line that hands `args` to a cell (booleans as bare flags, lists repeated). */
export function cellArgv(cell: Cell, args: Record<string, unknown> = {}): string[] {
  const out = ['--cell', cell.id];
  for (const [k, v] of Object.entries(args)) {
    if (v === undefined || v === false) continue;
    if (v === true) out.push(`--${k}`);
    else if (Array.isArray(v)) for (const item of v) out.push(`--${k}`, String(item));
    else out.push(`--${k}`, String(v));
  }
  return out;
}

/** `--dir, --tmp and --files are required` unless every option named was given. */
function requireArgs(values: Record<string, unknown>, names: readonly string[]): void {
  const missing = names.filter((n) => values[n] === undefined || (Array.isArray(values[n]) && values[n].length === 0));
  if (missing.length === 0) return;
  const flags = names.map((n) => `--${n}`);
  const list = flags.length === 1 ? flags[0] : `${flags.slice(0, -1).join(', ')} and ${flags[flags.length - 1]}`;
  throw new Error(`${list} ${flags.length === 1 ? 'is' : 'are'} required`);
}

async function runMeasure(cell: Cell): Promise<void> {
  const { values } = parseArgs({ options: { ...COMMON, cell: { type: 'string' }, ...cell.args }, strict: false });
  const tier = typeof values.tier === 'string' ? values.tier : '?';
  try {
    const a = parseArgs({ options: { ...COMMON, cell: { type: 'string' }, ...cell.args } }).values;
    requireArgs(a, cell.required);
    const r = await cell.run(a as CellValues<CellOptions>, tier);
    if (typeof r.skipped === 'string') {
      process.stdout.write(JSON.stringify({ cell: cell.id, tier, skipped: r.skipped }) + '\n');
      return;
    }
    emit({ cell: cell.id, tier, ...r });
  } catch (err) {
    fail(cell.id, tier, err);
  }
}

/**
 * Runs the cell named by --cell when `file` (the caller's import.meta.url) is the process's main
 * module; does nothing when a family imports the file for its definitions.
 */
export function runIfMain(file: string, ...cells: Cell[]): void {
  const main = process.argv[1];
  if (main === undefined || path.resolve(main) !== fileURLToPath(file)) return;
  const all = cells.flatMap(withPeers) as unknown as Cell[];
  const { values } = parseArgs({ options: { cell: { type: 'string' }, tier: { type: 'string', default: '?' } }, strict: false });
  const cell = all.find((c) => c.id === values.cell) ?? (values.cell === undefined && all.length === 1 ? all[0] : undefined);
  if (cell === undefined) fail(String(values.cell ?? '?'), String(values.tier), new Error(`--cell must name one of ${all.map((c) => c.id).join(', ')}`));
  void runMeasure(cell);
}
