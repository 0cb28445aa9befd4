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

/** Console output fits this many columns. */
export const TEXT_WIDTH = 100;
/** A cell longer than this moves into a numbered note, so one long remark does not widen a column. */
const MAX_CELL = 36;

/** Words of `text` in lines of at most `width` columns, later lines indented by `indent`. */
export function wrapText(text: string, width = TEXT_WIDTH, indent = '    '): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const room = width - (lines.length === 0 ? 0 : indent.length);
    if (line !== '' && line.length + 1 + word.length > room) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines.map((l, i) => (i === 0 ? l : indent + l)).join('\n');
}

/**
 * Fixed-width text within TEXT_WIDTH columns: long cells become notes, and a table still too
 * wide is printed in blocks of columns, each repeating the key columns (up to "tool" or "op").
 */
export function renderText(t: Table): string {
  const notes = [...t.notes];
  const rows = t.rows.map((r) =>
    r.map((c) => {
      if (c.length <= MAX_CELL) return c;
      notes.push(c);
      return `[${notes.length}]`;
    }),
  );
  const widths = t.headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const cell = (s: string, i: number) => (t.align[i] === 'r' ? s.padStart(widths[i]!) : s.padEnd(widths[i]!));
  const keyEnd = Math.max(1, t.headers.findIndex((h) => h === 'tool' || h === 'op') + 1) || 2;
  const keys = [...Array(Math.min(keyEnd, t.headers.length)).keys()];
  const span = (cols: number[]) => cols.reduce((n, i) => n + widths[i]! + 2, -2);
  const blocks: number[][] = [];
  let current: number[] = [];
  for (let i = keys.length; i < t.headers.length; i++) {
    if (current.length > 0 && span([...keys, ...current, i]) > TEXT_WIDTH) {
      blocks.push(current);
      current = [];
    }
    current.push(i);
  }
  if (current.length > 0 || blocks.length === 0) blocks.push(current);
  const out: string[] = [];
  for (const block of blocks) {
    const cols = [...keys, ...block];
    if (out.length > 0) out.push('');
    out.push(cols.map((i) => cell(t.headers[i]!, i)).join('  ').trimEnd());
    out.push(cols.map((i) => '-'.repeat(widths[i]!)).join('  '));
    for (const r of rows) out.push(cols.map((i) => cell(r[i] ?? '', i)).join('  ').trimEnd());
  }
  notes.forEach((n, i) => out.push(wrapText(`[${i + 1}] ${n}`)));
  return out.join('\n');
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
