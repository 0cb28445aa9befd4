/** Progress bars for long work, only on a terminal and never with --json. */
import cliProgress from 'cli-progress';
import type { ImportProgress, RepackProgress } from '../sdk/index.js';
import { formatBytes } from './output.js';

export interface Progress<P> {
  update: (p: P) => void;
  stop: () => void;
}

/**
 * A bar started on the first update, with `total` from it; `show` gives the bar's position and
 * the values of the format's other {fields}.
 */
function progressBar<P>(enabled: boolean, format: string, total: (p: P) => number, show: (p: P) => [number, Record<string, string>]): Progress<P> {
  if (!enabled || !process.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar({ stream: process.stderr, format, hideCursor: true, clearOnComplete: true }, cliProgress.Presets.shades_classic);
  let started = false;
  return {
    update: (p) => {
      const [value, fields] = show(p);
      if (!started) {
        bar.start(total(p), 0, fields);
        started = true;
      }
      bar.update(value, fields);
    },
    stop: () => {
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
