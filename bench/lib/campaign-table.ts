// Table code shared by the campaign families (issue 6): number accessors, formatting of signed
// sizes and ratios, error rows in custom tables, and splitting one cell's `cases` array into one
// Row per case.

import { DASH, fmtBytes } from './format.js';
import { firstLine } from './table.js';
import type { Family, Row } from './types.js';
import type { ChartHooks } from '../report/charts.js';

/** A family with report hooks (charts of chosen metrics). */
export type CampaignFamily = Family & ChartHooks;

export function num(x: unknown): number | undefined {
  return typeof x === 'number' && Number.isFinite(x) ? x : undefined;
}

export function fmtSigned(b: number | undefined): string {
  if (b === undefined) return DASH;
  return b < 0 ? `−${fmtBytes(-b)}` : fmtBytes(b);
}

export function fmtX(r: number | undefined, digits = 2): string {
  if (r === undefined || !Number.isFinite(r)) return DASH;
  return r >= 100 ? `${r.toFixed(0)}×` : r >= 10 ? `${r.toFixed(1)}×` : `${r.toFixed(digits)}×`;
}

export function fmtMBps(x: number | undefined): string {
  return x === undefined ? DASH : x >= 100 ? `${x.toFixed(0)} MB/s` : `${x.toPrecision(3)} MB/s`;
}

/** ms with sub-millisecond precision kept. */
export function fmtFineMs(ms: number | undefined): string {
  if (ms === undefined) return DASH;
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 10) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(0)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/** The row's extra[key] as a number. */
export function x(r: Row | undefined, key: string): number | undefined {
  return r === undefined ? undefined : num(r.extra[key]);
}

/** For tables: a failed row becomes "error [n]" with its message as footnote n. */
export function failedCells(r: Row, notes: string[], width: number, lead: string[]): string[] | undefined {
  if (r.status === 'ok') return undefined;
  notes.push(`${r.tool} @ ${r.tier} (${r.cell}): ${r.status}: ${firstLine(r.message)}`);
  return [...lead, `${r.status} [${notes.length}]`, ...Array<string>(Math.max(0, width - lead.length - 1)).fill(DASH)];
}

/**
 * One Row per element of the cell's `extra.cases` (objects with a `case` name): the case's
 * numeric `ms`/`storeBytes`/`objects`/`bytes`/`files` become Row fields, the rest its extra. A
 * failed cell stays one error Row.
 */
export function splitCases(row: Row): Row[] {
  const cases = row.extra.cases;
  if (row.status !== 'ok' || !Array.isArray(cases)) return [row];
  const { cases: _drop, ...shared } = row.extra;
  return (cases as Record<string, unknown>[]).map((cs) => {
    const out: Row = { ...row, cell: String(cs.case), extra: { ...shared } };
    for (const [k, v] of Object.entries(cs)) {
      if (k === 'case') continue;
      if ((k === 'ms' || k === 'storeBytes' || k === 'objects' || k === 'bytes' || k === 'files' || k === 'maxRssMiB') && typeof v === 'number') out[k] = v;
      else if (k === 'error') {
        out.status = 'error';
        out.message = String(v);
      } else out.extra[k] = v;
    }
    if (typeof cs.ms !== 'number') delete out.ms;
    return out;
  });
}

/** The row of `tool` with the same tier and cell (case) as `r`. */
export function peerOf(rows: Row[], r: Row, tool: string, sameCase = false): Row | undefined {
  return rows.find((q) => q.tool === tool && q.tier === r.tier && (!sameCase || q.cell === r.cell) && q.status === 'ok');
}

export function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a !== undefined && b !== undefined && b > 0 ? a / b : undefined;
}
