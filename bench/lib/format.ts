// Number formatting shared by console tables and the Markdown report. Sizes and throughput use
// decimal units (MB = 10^6 B, as `du -b` and MB/s); memory uses MiB (as the kernel reports it).

export const DASH = '—';

export function fmtMs(ms: number | undefined): string {
  if (ms === undefined) return DASH;
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${ms.toFixed(0)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

export function fmtBytes(b: number | undefined): string {
  if (b === undefined) return DASH;
  if (b < 1e3) return `${b} B`;
  if (b < 1e6) return `${(b / 1e3).toFixed(1)} kB`;
  if (b < 1e9) return `${(b / 1e6).toFixed(1)} MB`;
  return `${(b / 1e9).toFixed(2)} GB`;
}

export function fmtInt(n: number | undefined): string {
  return n === undefined || !Number.isFinite(n) ? DASH : Math.round(n).toLocaleString('en-US');
}

/** Rates: integers from 100 up, else 3 significant digits (a 1-file tier has ~0.4 files/s). */
export function fmtRate(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return DASH;
  return n >= 100 ? fmtInt(n) : Number(n.toPrecision(3)).toString();
}

export function fmtRatio(r: number | undefined): string {
  if (r === undefined || !Number.isFinite(r)) return DASH;
  return r >= 10 ? `${r.toFixed(1)}×` : `${r.toFixed(2)}×`;
}

export function fmtMiB(m: number | undefined): string {
  return m === undefined ? DASH : `${m.toFixed(0)} MiB`;
}

/** "1,000"-style labels for counts used as tier names. */
export function countLabel(n: number): string {
  return n.toLocaleString('en-US');
}
