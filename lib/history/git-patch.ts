/**
 * git's patch format, written from two versions of one path: `diff --git` headers, mode, new,
 * deleted and renamed files, index lines with git blob ids, unified hunks (lines from jsdiff),
 * and binary files decided as git does (a NUL in the first 8 KiB), either summarised or as a
 * `GIT binary patch` (zlib + base85) that `git apply` accepts. Text is handled as latin1 so
 * every byte survives unchanged whatever the encoding.
 */
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { structuredPatch } from 'diff/lib/patch/create.js';

/** One side of a file pair: what git tracks of a path (a regular file or a symlink). */
export interface PatchSide {
  path: Buffer;
  /** git's mode: 0o100644, 0o100755 or 0o120000. */
  mode: number;
  size: number;
  /** The bytes (a symlink's target). Not called for files over BIG_FILE unless a binary patch is asked for. */
  read: () => Buffer;
  /** git's blob id, streamed (files over BIG_FILE). */
  blobId: () => string;
}

/** Files larger than this are summarised as binary without being read whole (like git's core.bigFileThreshold). */
export const BIG_FILE = 64 * 1024 * 1024;

/** Whether a side must not be read whole. */
export function isBig(side: PatchSide | undefined): boolean {
  return side !== undefined && side.size > BIG_FILE;
}

export interface FilePair {
  old?: PatchSide;
  new?: PatchSide;
}

export interface PatchOptions {
  /** Treat every file as text (git's --text). */
  text?: boolean;
  /** Binary files as `GIT binary patch` data instead of one summary line (git's --binary). */
  binary?: boolean;
  /** Full 40-digit blob ids on index lines (always, with binary). */
  fullIndex?: boolean;
  /** Lines of context around each change (default 3). */
  context?: number;
}

/** What one file section changed, for --stat and the SDK's typed result. */
export interface FileStat {
  path: string;
  oldPath?: string;
  change: 'added' | 'deleted' | 'modified' | 'renamed';
  binary: boolean;
  added: number;
  removed: number;
  oldSize: number;
  newSize: number;
  oldBlob: string;
  newBlob: string;
  oldMode: number;
  newMode: number;
}

export const GIT_FILE = 0o100644;
export const GIT_EXEC = 0o100755;
export const GIT_LINK = 0o120000;
const ZERO_OID = '0'.repeat(40);
const BINARY_PROBE = 8000;

/** git's mode for a regular file: executable when the owner may execute it. */
export function gitFileMode(mode: number): number {
  return mode & 0o100 ? GIT_EXEC : GIT_FILE;
}

/** git's blob id of some bytes: sha1 of "blob <size>\0" and the bytes. */
export function gitBlobId(bytes: Buffer): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

/** git's blob id of `size` bytes given piece by piece. */
export function gitBlobIdOf(size: number, pieces: Iterable<Buffer>): string {
  const h = createHash('sha1').update(`blob ${size}\0`);
  for (const p of pieces) h.update(p);
  return h.digest('hex');
}

/** git decides binary by a NUL byte in the first 8000 bytes. */
export function looksBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, BINARY_PROBE).includes(0);
}

/** A path as git writes it in headers: C-quoted when it holds control, quote, backslash or non-ASCII bytes. */
export function quotePath(prefix: string, path: Buffer): string {
  let needs = false;
  for (const b of path) if (b < 0x20 || b === 0x22 || b === 0x5c || b >= 0x7f) needs = true;
  if (!needs) return prefix + path.toString('latin1');
  const esc: Record<number, string> = { 7: '\\a', 8: '\\b', 9: '\\t', 10: '\\n', 11: '\\v', 12: '\\f', 13: '\\r', 0x22: '\\"', 0x5c: '\\\\' };
  let s = '"' + prefix;
  for (const b of path) {
    if (esc[b] !== undefined) s += esc[b];
    else if (b < 0x20 || b >= 0x7f) s += '\\' + b.toString(8).padStart(3, '0');
    else s += String.fromCharCode(b);
  }
  return s + '"';
}

const B85 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~';

/** One `literal` block of a GIT binary patch: the deflated bytes in lines of at most 52. */
function binaryLiteral(bytes: Buffer): string {
  const z = deflateSync(bytes);
  let out = `literal ${bytes.length}\n`;
  for (let off = 0; off < z.length; off += 52) {
    const line = z.subarray(off, Math.min(z.length, off + 52));
    out += line.length <= 26 ? String.fromCharCode(0x41 + line.length - 1) : String.fromCharCode(0x61 + line.length - 27);
    for (let i = 0; i < line.length; i += 4) {
      let v = 0;
      for (let k = 0; k < 4; k++) v = v * 256 + (line[i + k] ?? 0);
      let group = '';
      for (let k = 0; k < 5; k++) {
        group = B85[v % 85] + group;
        v = Math.floor(v / 85);
      }
      out += group;
    }
    out += '\n';
  }
  return out + '\n';
}

/**
 * git's default hunk heading: the nearest line above the hunk that starts with a letter, `_`
 * or `$`, trailing whitespace dropped, at most 80 bytes.
 */
function funcLine(lines: string[], from: number): string {
  for (let i = Math.min(from, lines.length - 1); i >= 0; i--) {
    if (/^[A-Za-z_$]/.test(lines[i]!)) return lines[i]!.replace(/\s+$/, '').slice(0, 80).replace(/\s+$/, '');
  }
  return '';
}

/** Unified hunks of two texts (latin1 strings), in git's header style. */
function hunks(a: string, b: string, context: number): { text: string; added: number; removed: number } {
  const p = structuredPatch('a', 'b', a, b, undefined, undefined, { context });
  let text = '';
  let added = 0;
  let removed = 0;
  const range = (start: number, n: number) => (n === 1 ? `${start}` : `${n === 0 ? start - 1 : start},${n}`);
  const oldLines = p.hunks.length ? a.split('\n') : [];
  for (const h of p.hunks) {
    const func = funcLine(oldLines, h.oldStart - 2);
    text += `@@ -${range(h.oldStart, h.oldLines)} +${range(h.newStart, h.newLines)} @@${func ? ` ${func}` : ''}\n`;
    for (const line of h.lines) {
      if (line[0] === '+') added++;
      else if (line[0] === '-') removed++;
      text += line + '\n';
    }
  }
  return { text, added, removed };
}

/**
 * How much of two versions is the same, 0–100, as git's rename detection estimates it: the
 * bytes of lines they share (each line counted as often as both have it) over the larger size.
 * 100 only for identical bytes. Renames below 50 are shown as a deletion and an addition.
 */
export function similarityScore(a: Buffer, b: Buffer): number {
  if (a.equals(b)) return 100;
  const larger = Math.max(a.length, b.length);
  if (Math.min(a.length, b.length) * 2 < larger) return Math.floor((Math.min(a.length, b.length) * 100) / larger);
  const count = new Map<string, number>();
  for (const line of a.toString('latin1').split('\n')) count.set(line, (count.get(line) ?? 0) + 1);
  let common = 0;
  for (const line of b.toString('latin1').split('\n')) {
    const n = count.get(line);
    if (!n) continue;
    count.set(line, n - 1);
    common += line.length + 1;
  }
  return Math.min(99, Math.floor((Math.min(common, larger) * 100) / larger));
}

/** A pair's two paths (the one side's path for both when the other is absent) and its change. */
interface Named {
  o: PatchSide | undefined;
  n: PatchSide | undefined;
  aPath: Buffer;
  bPath: Buffer;
  renamed: boolean;
}

function named(pair: FilePair): Named {
  const { old: o, new: n } = pair;
  if (!o && !n) throw new Error('a file pair needs at least one side');
  const aPath = (o ?? n)!.path;
  const bPath = (n ?? o)!.path;
  return { o, n, aPath, bPath, renamed: o !== undefined && n !== undefined && !o.path.equals(n.path) };
}

/** `a/path` or `b/path` when that side exists, else /dev/null. */
function sideName(p: Named, side: 'a' | 'b'): string {
  return side === 'a' ? (p.o ? quotePath('a/', p.aPath) : '/dev/null') : p.n ? quotePath('b/', p.bPath) : '/dev/null';
}

/** The `diff --git` line and the mode and rename lines below it. */
function headLines(p: Named, similarity: () => number): string {
  const { o, n } = p;
  let head = `diff --git ${quotePath('a/', p.aPath)} ${quotePath('b/', p.bPath)}\n`;
  if (!o) head += `new file mode ${n!.mode.toString(8)}\n`;
  else if (!n) head += `deleted file mode ${o.mode.toString(8)}\n`;
  else {
    if (o.mode !== n.mode) head += `old mode ${o.mode.toString(8)}\nnew mode ${n.mode.toString(8)}\n`;
    if (p.renamed) head += `similarity index ${similarity()}%\nrename from ${quotePath('', p.aPath)}\nrename to ${quotePath('', p.bPath)}\n`;
  }
  return head;
}

function indexLine(p: Named, oldBlob: string, newBlob: string, full: boolean): string {
  const id = (x: string) => (full ? x : x.slice(0, 7));
  const { o, n } = p;
  return `index ${id(oldBlob)}..${id(newBlob)}${o && n && o.mode === n.mode ? ` ${o.mode.toString(8)}` : ''}\n`;
}

function fileStat(p: Named, binary: boolean, sizes: { oldSize: number; newSize: number }, oldBlob: string, newBlob: string): FileStat {
  const { o, n } = p;
  return {
    path: p.bPath.toString('utf8'),
    ...(p.renamed ? { oldPath: p.aPath.toString('utf8') } : {}),
    change: !o ? 'added' : !n ? 'deleted' : p.renamed ? 'renamed' : 'modified',
    binary,
    added: 0,
    removed: 0,
    ...sizes,
    oldBlob: o ? oldBlob : '',
    newBlob: n ? newBlob : '',
    oldMode: o?.mode ?? 0,
    newMode: n?.mode ?? 0,
  };
}

/**
 * One file's section of a git patch. A pair whose kinds differ (file ↔ symlink) must be given
 * as two pairs (a deletion and an addition), as git writes it.
 */
export function formatFilePatch(pair: FilePair, opts: PatchOptions = {}): { text: string; stat: FileStat } {
  const p = named(pair);
  const { o, n } = p;
  if (!opts.binary && (isBig(o) || isBig(n))) return bigFilePatch(p, opts);
  const oldBytes = o ? o.read() : Buffer.alloc(0);
  const newBytes = n ? n.read() : Buffer.alloc(0);
  const oldBlob = o ? gitBlobId(oldBytes) : ZERO_OID;
  const newBlob = n ? gitBlobId(newBytes) : ZERO_OID;
  const bin = !opts.text && (looksBinary(oldBytes) || looksBinary(newBytes));
  const sameContent = oldBlob === newBlob && o !== undefined && n !== undefined;
  const stat = fileStat(p, bin, { oldSize: oldBytes.length, newSize: newBytes.length }, oldBlob, newBlob);
  let body = '';
  if (!sameContent && !bin) {
    const h = hunks(oldBytes.toString('latin1'), newBytes.toString('latin1'), opts.context ?? 3);
    stat.added = h.added;
    stat.removed = h.removed;
    if (h.text) body = `--- ${sideName(p, 'a')}\n+++ ${sideName(p, 'b')}\n${h.text}`;
  } else if (!sameContent) {
    body = opts.binary ? `GIT binary patch\n${binaryLiteral(newBytes)}${binaryLiteral(oldBytes)}` : `Binary files ${sideName(p, 'a')} and ${sideName(p, 'b')} differ\n`;
  }
  let head = headLines(p, () => similarityScore(oldBytes, newBytes));
  if (!sameContent) head += indexLine(p, oldBlob, newBlob, Boolean(opts.fullIndex || (bin && opts.binary)));
  return { text: head + body, stat };
}

/** A pair with a file over BIG_FILE: a binary summary from streamed blob ids, nothing held whole. */
function bigFilePatch(p: Named, opts: PatchOptions): { text: string; stat: FileStat } {
  const { o, n } = p;
  const oldBlob = o ? o.blobId() : ZERO_OID;
  const newBlob = n ? n.blobId() : ZERO_OID;
  let text = headLines(p, () => (oldBlob === newBlob ? 100 : 50));
  if (oldBlob !== newBlob) {
    text += indexLine(p, oldBlob, newBlob, Boolean(opts.fullIndex));
    text += `Binary files ${sideName(p, 'a')} and ${sideName(p, 'b')} differ\n`;
  }
  return { text, stat: fileStat(p, true, { oldSize: o?.size ?? 0, newSize: n?.size ?? 0 }, oldBlob, newBlob) };
}

/** git's `--stat` lines for some file sections. */
export function formatStat(stats: FileStat[], width = 80): string[] {
  const name = (s: FileStat) => (s.oldPath !== undefined ? `${s.oldPath} => ${s.path}` : s.path);
  const nameWidth = Math.max(0, ...stats.map((s) => name(s).length));
  const maxChanges = Math.max(0, ...stats.map((s) => s.added + s.removed));
  const numWidth = String(maxChanges).length;
  const barRoom = Math.max(10, width - nameWidth - numWidth - 6);
  const lines: string[] = [];
  let ins = 0;
  let del = 0;
  for (const s of stats) {
    ins += s.added;
    del += s.removed;
    if (s.binary) {
      lines.push(` ${name(s).padEnd(nameWidth)} | Bin ${s.oldSize} -> ${s.newSize} bytes`);
      continue;
    }
    const total = s.added + s.removed;
    const scale = maxChanges > barRoom ? barRoom / maxChanges : 1;
    const plus = Math.round(s.added * scale);
    const minus = Math.round(s.removed * scale);
    lines.push(` ${name(s).padEnd(nameWidth)} | ${String(total).padStart(numWidth)} ${'+'.repeat(plus)}${'-'.repeat(minus)}`.trimEnd());
  }
  const n = stats.length;
  let summary = ` ${n} file${n === 1 ? '' : 's'} changed`;
  if (ins || !del) summary += `, ${ins} insertion${ins === 1 ? '' : 's'}(+)`;
  if (del || !ins) summary += `, ${del} deletion${del === 1 ? '' : 's'}(-)`;
  lines.push(summary);
  return lines;
}
