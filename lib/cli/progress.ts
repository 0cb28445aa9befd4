/** A progress bar for long imports, only on a terminal and never with --json. */
import cliProgress from 'cli-progress';
import type { ImportProgress, RepackProgress } from '../sdk/index.js';
import { formatBytes } from './output.js';

export function importProgress(enabled: boolean): { update: (p: ImportProgress) => void; stop: () => void } {
  if (!enabled || !process.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: 'import [{bar}] {percentage}% | {value}/{total} entries | {size}', hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update: (p) => {
      if (!started) {
        bar.start(p.totalEntries, 0, { size: '0 B' });
        started = true;
      }
      bar.update(p.files, { size: formatBytes(p.bytes) });
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}

/** The same for `db repack`: rows rewritten, and the stored bytes of the old rows against the new ones. */
export function repackProgress(enabled: boolean): { update: (p: RepackProgress) => void; stop: () => void } {
  if (!enabled || !process.stderr.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    { stream: process.stderr, format: 'repack [{bar}] {percentage}% | {value}/{total} rows | {before} -> {after} {phase}', hideCursor: true, clearOnComplete: true },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    update: (p) => {
      if (!started) {
        bar.start(p.rowsTotal, 0, { before: '0 B', after: '0 B', phase: '' });
        started = true;
      }
      bar.update(p.rowsDone, { before: formatBytes(p.bytesBefore), after: formatBytes(p.bytesAfter), phase: p.phase === 'vacuum' ? '(vacuum)' : '' });
    },
    stop: () => {
      if (started) bar.stop();
    },
  };
}
