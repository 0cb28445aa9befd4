// Tables: the standard cost table shared by families, and its two renderings (fixed-width text for
// the console, GitHub Markdown for docs/BENCHMARKS.md).

import { DASH, fmtBytes, fmtInt, fmtMiB, fmtMs, fmtRate, fmtRatio } from './format.js';
import type { Row, Table } from './types.js';

/** First line of an error, short enough for a footnote. */
export function firstLine(s: string | undefined, n = 160): string {
  const line = (s ?? '').split('\n').find((l) => l.trim() !== '') ?? '';
  return line.length > n ? line.slice(0, n) + '…' : line;
}

/**
 * tier | tool | time | files/s | MB/s | stored | objects | ×peer… | peak RSS.
 * A ratio is this row's time over the peer's time at the same tier (layerfs_ms / git_ms), so
 * below 1× means faster than the peer.
 */
export function standardTable(rows: Row[], peers: string[] = []): Table {
  const usedPeers = peers.filter((p) => rows.some((r) => r.tool === p && r.status === 'ok'));
  const headers = ['tier', 'tool', 'time', 'files/s', 'MB/s', 'stored', 'objects', ...usedPeers.map((p) => `×${p}`), 'peak RSS'];
  const align: Table['align'] = ['r', 'l', 'r', 'r', 'r', 'r', 'r', ...usedPeers.map(() => 'r' as const), 'r'];
  const notes: string[] = [];
  const out = rows.map((r) => {
    if (r.status !== 'ok') {
      notes.push(`${r.tool} @ ${r.tier}: ${r.status === 'error' ? 'error: ' : 'skipped: '}${firstLine(r.message)}`);
      const mark = `${r.status} [${notes.length}]`;
      return [r.tier, r.tool, mark, ...Array<string>(headers.length - 3).fill(DASH)];
    }
    const secs = r.ms !== undefined ? r.ms / 1000 : undefined;
    const perSec = (x: number | undefined) => (x !== undefined && secs ? x / secs : undefined);
    const ratios = usedPeers.map((p) => {
      const peer = rows.find((q) => q.tool === p && q.tier === r.tier && q.status === 'ok');
      return fmtRatio(r.ms !== undefined && peer?.ms ? r.ms / peer.ms : undefined);
    });
    const mbs = perSec(r.bytes);
    return [
      r.tier,
      r.tool,
      fmtMs(r.ms),
      fmtRate(perSec(r.files)),
      fmtRate(mbs !== undefined ? mbs / 1e6 : undefined),
      fmtBytes(r.storeBytes),
      fmtInt(r.objects),
      ...ratios,
      fmtMiB(r.maxRssMiB),
    ];
  });
  return { headers, align, rows: out, notes };
}

export function renderText(t: Table): string {
  const widths = t.headers.map((h, i) => Math.max(h.length, ...t.rows.map((r) => (r[i] ?? '').length)));
  const cell = (s: string, i: number) => (t.align[i] === 'r' ? s.padStart(widths[i]!) : s.padEnd(widths[i]!));
  const lines = [
    t.headers.map(cell).join('  '),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...t.rows.map((r) => r.map(cell).join('  ')),
    ...t.notes.map((n, i) => `[${i + 1}] ${n}`),
  ];
  return lines.join('\n');
}

export function renderMarkdown(t: Table): string {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const lines = [
    `| ${t.headers.map(esc).join(' | ')} |`,
    `| ${t.align.map((a) => (a === 'r' ? '---:' : ':---')).join(' | ')} |`,
    ...t.rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
  ];
  if (t.notes.length > 0) lines.push('', ...t.notes.map((n, i) => `${i + 1}. ${esc(n)}`));
  return lines.join('\n');
}
