/**
 * Output: with --json exactly one JSON object on stdout (ids hex, bigints as decimal strings);
 * otherwise short human lines. Errors go to stderr (and as {"error": …} on stdout with --json).
 */
import { isLayerFsError } from '../sdk/errors.js';
import type { DiffPage } from '../sdk/index.js';

export function toJson(value: unknown): string {
  // Buffer.prototype.toJSON runs before a replacer sees its result, so look at the holder's own
  // value: name and path bytes print as base64, not as {"type":"Buffer","data":[…]}.
  return JSON.stringify(
    value,
    function (this: Record<string, unknown>, k, v) {
      const own = this[k];
      return Buffer.isBuffer(own) ? own.toString('base64') : typeof v === 'bigint' ? v.toString() : v;
    },
    2,
  );
}

const ESCAPES: Record<number, string> = { 7: '\\a', 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r', 34: '\\"', 92: '\\\\' };

/**
 * A name or path for a terminal, quoted as git quotes paths: printed as is when it is plain,
 * else in double quotes with C escapes, so an ESC sequence never reaches the terminal and a
 * newline never splits a line. Bytes that are not UTF-8, and control characters (C0, DEL, C1),
 * print as octal escapes; other non-ASCII text stays readable.
 */
export function quoteName(name: string | Buffer): string {
  const bytes = typeof name === 'string' ? Buffer.from(name, 'utf8') : name;
  const text = bytes.toString('utf8');
  const valid = Buffer.from(text, 'utf8').equals(bytes);
  if (valid && !/[\x00-\x1f\x7f-\x9f"\\]/.test(text)) return text;
  let out = '';
  if (valid) {
    for (const ch of text) {
      const cp = ch.codePointAt(0)!;
      if (ESCAPES[cp]) out += ESCAPES[cp];
      else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) for (const b of Buffer.from(ch, 'utf8')) out += `\\${b.toString(8).padStart(3, '0')}`;
      else out += ch;
    }
  } else {
    for (const b of bytes) {
      if (ESCAPES[b]) out += ESCAPES[b];
      else if (b < 0x20 || b >= 0x7f) out += `\\${b.toString(8).padStart(3, '0')}`;
      else out += String.fromCharCode(b);
    }
  }
  return `"${out}"`;
}

/**
 * A reader that goes away (`layerfs cat … | head`) ends the command quietly, like cat or git:
 * the output nobody reads is dropped and the exit is clean. Nothing is lost: results are printed
 * after the operation has finished.
 */
export function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
      throw e;
    });
  }
}

export class Out {
  constructor(readonly json: boolean) {}

  /** Prints the result: `human` renders it for people. */
  result(value: unknown, human: () => string | string[]): void {
    if (this.json) {
      process.stdout.write(toJson(value) + '\n');
      return;
    }
    const text = human();
    const lines = Array.isArray(text) ? text : [text];
    if (lines.length > 0) process.stdout.write(lines.join('\n') + '\n');
  }

  error(e: unknown): number {
    if (isLayerFsError(e)) {
      if (this.json) process.stdout.write(toJson({ error: e.toJSON() }) + '\n');
      process.stderr.write(`layerfs: ${e.message} [${e.code}]\n`);
      return 1;
    }
    if (this.json) process.stdout.write(toJson({ error: { code: 'ERR_INTERNAL', message: String((e as Error)?.message ?? e) } }) + '\n');
    process.stderr.write(`layerfs: internal error: ${(e as Error)?.stack ?? String(e)}\n`);
    return 70;
  }
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export function modeString(kind: string, mode: number): string {
  const k = { file: '-', dir: 'd', symlink: 'l', fifo: 'p', chardev: 'c', blockdev: 'b' }[kind] ?? '?';
  const rwx = (bits: number, special: boolean, ch: string) =>
    `${bits & 4 ? 'r' : '-'}${bits & 2 ? 'w' : '-'}${special ? (bits & 1 ? ch : ch.toUpperCase()) : bits & 1 ? 'x' : '-'}`;
  return k + rwx(mode >> 6, (mode & 0o4000) !== 0, 's') + rwx(mode >> 3, (mode & 0o2000) !== 0, 's') + rwx(mode, (mode & 0o1000) !== 0, 't');
}

/** ls -l's time column, in UTC and sortable: 2026-12-01 19:41. */
export function mtimeText(ns: bigint): string {
  return new Date(Number(ns / 1_000_000n)).toISOString().slice(0, 16).replace('T', ' ');
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** "12 files, 3 directories, 1 symlink" (+ special files and extra hard links when there are any); the root counts as a directory. */
export function treeCounts(r: { files: number; directories: number; symlinks: number; specials: number; hardLinks: number }): string {
  const parts = [plural(r.files, 'file', 'files'), plural(r.directories, 'directory', 'directories'), plural(r.symlinks, 'symlink', 'symlinks')];
  if (r.specials) parts.push(plural(r.specials, 'special file', 'special files'));
  if (r.hardLinks) parts.push(plural(r.hardLinks, 'extra hard link', 'extra hard links'));
  return parts.join(', ');
}

/** An id as the human output shows it: its first 12 hex digits, or '-' for none. */
export const short = (id: string | null | undefined): string => (id ? id.slice(0, 12) : '-');

/** The one-letter change codes of diff and status listings, as git prints them. */
export const CHANGE_LETTER = { added: 'A', deleted: 'D', modified: 'M', renamed: 'R' } as const;

/** A page of a Layer/Branch diff, one line per entry, and how to continue a long one. */
export function diffPageLines(page: DiffPage): string[] {
  const lines = page.entries.map((e) => `${CHANGE_LETTER[e.change]}\t${e.oldPath !== undefined ? `${quoteName(e.oldPathBytes ?? e.oldPath)} -> ` : ''}${quoteName(e.pathBytes)}${e.fields.length ? `\t(${e.fields.join(',')})` : ''}`);
  if (page.next) lines.push(`… ${page.total - page.entries.length} more; continue with --after ${page.next}`);
  return lines;
}

/** Writes to stdout, waiting for the reader when the pipe is full (a large patch is never held whole). */
export async function writeStdout(b: Buffer | string): Promise<void> {
  if (!process.stdout.write(b)) await new Promise((r) => process.stdout.once('drain', r));
}
