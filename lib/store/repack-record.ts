/**
 * Which pack rows a repack wrote (meta row `repacked_rows`, docs/FORMAT.md): the next repack
 * skips them unless asked for a higher level, so it costs what was written since, and a repack
 * cut short by a crash resumes where it stopped. Other writers' rows, committed meanwhile,
 * are not in it. Only an optimisation: a lost or wrong record costs a rewrite, never content.
 */
import type { Db } from './store-file.js';

const KEY = 'repacked_rows';
/** Bumped whenever repack's layout changes, so rows of an older layout get rewritten. */
const LAYOUT = 1;

export interface RepackRecord {
  /** The lowest level any recorded row was written at. */
  level: number;
  /** Pack ids, as sorted, disjoint, inclusive ranges. */
  rows: [number, number][];
}

export function loadRecord(db: Db): RepackRecord | undefined {
  const value = db.prepare('SELECT value FROM meta WHERE key = ?').pluck().get(KEY) as string | undefined;
  if (value === undefined) return undefined;
  try {
    const r = JSON.parse(value) as { layout?: unknown; level?: unknown; rows?: unknown };
    if (r.layout !== LAYOUT || typeof r.level !== 'number' || !Array.isArray(r.rows)) return undefined;
    const rows = (r.rows as unknown[]).filter((x): x is [number, number] => Array.isArray(x) && x.length === 2 && Number.isInteger(x[0]) && Number.isInteger(x[1]));
    return { level: r.level, rows };
  } catch {
    return undefined;
  }
}

/** Whether pack id `id` is in the record's ranges. */
export function recorded(rec: RepackRecord | undefined, id: number): boolean {
  if (!rec) return false;
  let lo = 0;
  let hi = rec.rows.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [a, b] = rec.rows[mid]!;
    if (id < a) hi = mid - 1;
    else if (id > b) lo = mid + 1;
    else return true;
  }
  return false;
}

/**
 * Adds `ids` (rows just written at `level`) to the stored record, inside the caller's write
 * transaction; with `fresh` the old record is dropped first (a rewrite at a higher level).
 */
export function recordRows(db: Db, level: number, ids: number[], fresh: boolean): void {
  const old = fresh ? undefined : loadRecord(db);
  const all: [number, number][] = [...(old?.rows ?? []), ...ids.map((i): [number, number] => [i, i])].sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const r of all) {
    const last = merged[merged.length - 1];
    if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
    else merged.push([r[0], r[1]]);
  }
  const value = JSON.stringify({ layout: LAYOUT, level: Math.min(level, old?.level ?? level), rows: merged });
  db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value').run(KEY, value);
}
