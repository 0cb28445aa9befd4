/**
 * Progress bars for long work: only on a terminal (stderr), never with --json or --quiet. A bar
 * appears only once the work has run for a moment, so quick commands print nothing extra.
 */
import cliProgress from 'cli-progress';
import type { ExportProgress, ImportProgress, RemoveProgress, RepackProgress, VerifyProgress } from '../sdk/index.js';
import { formatBytes } from './output.js';

export interface Progress<P> {
  update: (p: P) => void;
  stop: () => void;
}

/** Work shorter than this gets no bar ($LAYERFS_PROGRESS_AFTER_MS changes it; 0 shows every bar). */
const SHOW_AFTER_MS = Number(process.env.LAYERFS_PROGRESS_AFTER_MS ?? '') >= 0 && process.env.LAYERFS_PROGRESS_AFTER_MS ? Number(process.env.LAYERFS_PROGRESS_AFTER_MS) : 300;

/** Whether bars may show: a terminal on stderr, and neither --json nor --quiet. */
export function barsWanted(g: { json?: boolean; quiet?: boolean }): boolean {
  return !g.json && !g.quiet && Boolean(process.stderr.isTTY);
}

/**
 * A bar started on the first update after SHOW_AFTER_MS, with `total` from it; `show` gives the
 * bar's position and the values of the format's other {fields}.
 */
function progressBar<P>(enabled: boolean, format: string, total: (p: P) => number, show: (p: P) => [number, Record<string, string>]): Progress<P> {
  if (!enabled || !process.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar({ stream: process.stderr, format, hideCursor: true, clearOnComplete: true }, cliProgress.Presets.shades_classic);
  const t0 = performance.now();
  let started = false;
  return {
    update: (p) => {
      if (!started && performance.now() - t0 < SHOW_AFTER_MS) return;
      const [value, fields] = show(p);
      if (!started) {
        bar.start(total(p), 0, fields);
        started = true;
      }
      bar.setTotal(total(p));
      bar.update(value, fields);
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}

/**
 * Work whose size is not known ahead (a commit's scan, a daemon's reply): the elapsed time,
 * redrawn by a timer while the work awaits.
 */
export function activity(enabled: boolean, label: string): { stop: () => void } {
  if (!enabled || !process.stderr.isTTY) return { stop: () => {} };
  const bar = new cliProgress.SingleBar({ stream: process.stderr, format: `${label} {elapsed} s`, hideCursor: true, clearOnComplete: true, fps: 5 }, cliProgress.Presets.shades_classic);
  const t0 = performance.now();
  let started = false;
  const timer = setInterval(() => {
    const elapsed = ((performance.now() - t0) / 1000).toFixed(1);
    if (!started) {
      bar.start(1, 0, { elapsed });
      started = true;
    } else bar.update(0, { elapsed });
  }, SHOW_AFTER_MS);
  return {
    stop: () => {
      clearInterval(timer);
      if (started) bar.stop();
    },
  };
}

/** An import: entries scanned of the tree's, and the bytes read. */
export function importProgress(enabled: boolean): Progress<ImportProgress> {
  return progressBar(enabled, 'import [{bar}] {percentage}% | {value}/{total} entries | {size}', (p) => p.totalEntries, (p) => [p.files, { size: formatBytes(p.bytes) }]);
}

/** `db repack`: rows rewritten, and the stored bytes of the old rows against the new ones. */
export function repackProgress(enabled: boolean): Progress<RepackProgress> {
  return progressBar(
    enabled,
    'repack [{bar}] {percentage}% | {value}/{total} rows | {before} -> {after} {phase}',
    (p) => p.rowsTotal,
    (p) => [p.rowsDone, { before: formatBytes(p.bytesBefore), after: formatBytes(p.bytesAfter), phase: p.phase === 'vacuum' ? '(vacuum)' : '' }],
  );
}

/** export and a materialized `workspace create`: file bytes written of the state's, and entries. */
export function exportProgress(enabled: boolean, label: string): Progress<ExportProgress> {
  return progressBar(
    enabled,
    `${label} [{bar}] {percentage}% | {done} of {all} | {entries}/{totalEntries} entries`,
    (p) => Math.max(1, p.totalBytes),
    (p) => [p.totalBytes ? p.bytes : 1, { done: formatBytes(p.bytes), all: formatBytes(p.totalBytes), entries: String(p.entries), totalEntries: String(p.totalEntries) }],
  );
}

/** verify: distinct objects re-hashed of the Store's. */
export function verifyProgress(enabled: boolean): Progress<VerifyProgress> {
  return progressBar(enabled, 'verify [{bar}] {percentage}% | {value}/{total} objects | {size}', (p) => Math.max(1, p.totalObjects), (p) => [p.objects, { size: formatBytes(p.bytes) }]);
}

/** A materialized `workspace end`: top-level entries removed. */
export function removeProgress(enabled: boolean): Progress<RemoveProgress> {
  return progressBar(enabled, 'end: removing [{bar}] {percentage}% | {value}/{total} top-level entries', (p) => p.total, (p) => [p.done, {}]);
}
