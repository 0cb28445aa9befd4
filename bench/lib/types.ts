// The vocabulary of the harness. A Family is one benchmark question (e.g. "how long does
// importing a tree take, against git and tar?"), measured at several Tiers; each measurement is a
// Row. Families live one per file in bench/families/ and are discovered by the runner, so adding
// one never touches the runner.

import type { Cell, CellArgs, CellOptions } from './define-cell.js';

export interface Tier {
  /** Shown in tables and passed to cells as --tier, e.g. "10,000" or "64 MiB". */
  label: string;
  /** Numeric size of the tier, the x axis of charts (files, MiB, ...). */
  value: number;
  /** Unit of `value`, e.g. "files", "MiB". */
  unit: string;
}

export interface Row {
  family: string;
  tier: string;
  tierValue: number;
  tierUnit: string;
  /** Who did the work: "layerfs", "git", "tar", ... (ratios are taken against peer tools). */
  tool: string;
  /** The cell (or micro-benchmark) that produced the row. */
  cell: string;
  status: 'ok' | 'error' | 'skipped';
  /** Error text or skip reason. */
  message?: string;
  ms?: number;
  maxRssMiB?: number;
  /** Input size: files and bytes the operation covered. */
  files?: number;
  bytes?: number;
  /** Bytes the tool keeps afterwards (Store file + WAL, .git, ...). */
  storeBytes?: number;
  /** Objects the tool created. */
  objects?: number;
  /** A single reported figure, for families whose rows are not timings (micro-benchmarks). */
  value?: number;
  /** Everything else the cell printed. */
  extra: Record<string, unknown>;
}

export interface CellRequest<O extends CellOptions = CellOptions> {
  tier: Tier;
  /** The cell to run (bench/cells/<family>.ts, lib/define-cell.ts). */
  cell: Cell<O>;
  args?: CellArgs<O>;
  /** The rows' tool when it is not the cell's own (e.g. 'layerfs-raw' for a variant run). */
  tool?: string;
  /** Pass a fresh scratch directory as --tmp (removed afterwards unless --keep-tmp). */
  scratch?: boolean;
}

export interface RunContext {
  quick: boolean;
  /** Progress to stderr (stdout carries the tables). */
  log(msg: string): void;
  /** Runs one cell as a child process and turns its JSON line into a Row (never throws). */
  runCell<O extends CellOptions>(req: CellRequest<O>): Row;
  /** Records a fixture used by this run (for results and the report). */
  noteFixture(f: { name: string; dir: string; reused: boolean; manifest: unknown }): void;
}

export interface Table {
  headers: string[];
  /** 'r' for numeric columns. */
  align: ('l' | 'r')[];
  rows: string[][];
  /** Footnotes (errors, skips). */
  notes: string[];
}

export interface Family {
  /** Identifier used by --only and in results, e.g. "init_namespace". */
  name: string;
  /** One-line heading for tables and the report. */
  title: string;
  /** What is measured and how; goes into docs/BENCHMARKS.md. */
  description: string;
  /** Position among families (lower first); default 100. */
  order?: number;
  tiers(quick: boolean): Tier[];
  run(tier: Tier, ctx: RunContext): Promise<Row[]> | Row[];
  /** Custom table; default: the standard cost table (see lib/table.ts). */
  table?(rows: Row[]): Table;
  /** Peer tools for ratio columns (layerfs_ms / peer_ms); default none. */
  peers?: string[];
  /** Draw charts of cost vs tier; default true. */
  charts?: boolean;
}
