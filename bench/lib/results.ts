// The machine-readable record of one campaign: bench/.out/results-<timestamp>.json. The report is
// generated from this alone (plus the family files for table layout), so `--report-from FILE`
// can redraw docs/BENCHMARKS.md without rerunning anything.

import type { Machine } from './machine.js';
import type { Row } from './types.js';

export interface FixtureNote {
  name: string;
  dir: string;
  reused: boolean;
  manifest: unknown;
}

export interface Results {
  version: 1;
  startedAt: string;
  finishedAt: string;
  quick: boolean;
  /** Families that were asked for (null: all). */
  only: string[] | null;
  argv: string[];
  /** Taken at the end of the run (its loadAvg covers the run); loadAvgAtStart from before. */
  machine: Machine;
  loadAvgAtStart: number[];
  fixtures: FixtureNote[];
  rows: Row[];
}
