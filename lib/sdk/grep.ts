/**
 * grep: searches the files of a state without exporting it, like `git grep -n`. Patterns are
 * JavaScript regular expressions (or fixed strings), matched line by line against UTF-8 text;
 * binary files (a NUL in the first 8000 bytes) are only named, unless `text`.
 */
import { LayerFsError } from '../errors.js';
import { looksBinary } from '../history/index.js';
import { InodeKind, type Inode } from '../store/tree/inode.js';
import type { FsView } from '../store/tree/view.js';
import { inodeAt, pathFilters } from './patch.js';

export interface GrepOptions {
  /** Only at or below these paths. */
  paths?: string[];
  ignoreCase?: boolean;
  /** The pattern is a plain string, not a regular expression. */
  fixed?: boolean;
  /** Search binary files as text. */
  text?: boolean;
  /** Stop after this many matching lines (default 10,000). */
  limit?: number;
}

export interface GrepMatch {
  path: string;
  /** 1-based line number. */
  line: number;
  text: string;
}

export interface GrepResult {
  matches: GrepMatch[];
  /** Binary files that match (their lines are not shown). */
  binaryFiles: string[];
  /** Files searched. */
  files: number;
  /** The limit was reached: more lines may match. */
  truncated: boolean;
}

function compile(pattern: string, opts: GrepOptions): RegExp {
  if (typeof pattern !== 'string' || pattern.length === 0) throw new LayerFsError('ERR_INVALID_ARGUMENT', 'grep needs a non-empty pattern');
  const source = opts.fixed ? pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : pattern;
  try {
    return new RegExp(source, opts.ignoreCase ? 'iu' : 'u');
  } catch (e) {
    throw new LayerFsError('ERR_INVALID_ARGUMENT', `not a valid regular expression: ${(e as Error).message}`, { argument: 'pattern', hint: 'patterns are JavaScript regular expressions; pass --fixed-strings for plain text' });
  }
}

/** Searches the state `view` for `pattern`. */
export function grepState(view: FsView, pattern: string, opts: GrepOptions = {}): GrepResult {
  const re = compile(pattern, opts);
  const limit = opts.limit ?? 10_000;
  if (!Number.isSafeInteger(limit) || limit < 1) throw new LayerFsError('ERR_INVALID_ARGUMENT', `limit must be a positive integer, got ${String(opts.limit)}`, { argument: 'limit' });
  const r: GrepResult = { matches: [], binaryFiles: [], files: 0, truncated: false };
  // Line by line as the pieces arrive: a large file is never held whole.
  const searchFile = (path: Buffer, inode: Inode): void => {
    r.files++;
    const display = path.toString('utf8');
    let rest: Buffer = Buffer.alloc(0);
    let lineNo = 0;
    let decided = opts.text === true;
    const scan = (text: Buffer, last: boolean): boolean => {
      const lines = text.toString('utf8').split('\n');
      if (last && lines[lines.length - 1] === '') lines.pop();
      for (const line of lines) {
        lineNo++;
        if (!re.test(line)) continue;
        if (r.matches.length >= limit) {
          r.truncated = true;
          return false;
        }
        r.matches.push({ path: display, line: lineNo, text: line });
      }
      return true;
    };
    for (const piece of view.content(inode)) {
      let buf: Buffer = rest.length ? Buffer.concat([rest, piece]) : piece;
      if (!decided && buf.length < 8000 && buf.length < inode.size) {
        rest = buf;
        continue;
      }
      if (!decided) {
        decided = true;
        if (looksBinary(buf)) return binaryMatch(path, inode, display);
      }
      const nl = buf.lastIndexOf(0x0a);
      rest = nl < 0 ? buf : buf.subarray(nl + 1);
      buf = nl < 0 ? Buffer.alloc(0) : buf.subarray(0, nl);
      if (nl >= 0 && !scan(buf, false)) return;
    }
    if (!decided && looksBinary(rest)) return binaryMatch(path, inode, display);
    if (rest.length) scan(rest, true);
  };
  // A binary file only says whether it matches (its bytes read as latin1, piece by piece).
  const binaryMatch = (_path: Buffer, inode: Inode, display: string): void => {
    for (const piece of view.content(inode)) {
      if (re.test(piece.toString('latin1'))) {
        r.binaryFiles.push(display);
        return;
      }
    }
  };
  const walk = (path: Buffer, inode: Inode): void => {
    if (r.truncated) return;
    if (inode.kind === InodeKind.File) return searchFile(path, inode);
    if (inode.kind !== InodeKind.Dir) return;
    for (const e of view.readdir(inode)) walk(path.length ? Buffer.concat([path, Buffer.from('/'), e.name]) : e.name, view.inode(e.serial));
  };
  const filters = pathFilters(opts.paths);
  for (const p of filters.length ? filters : [Buffer.alloc(0)]) {
    const inode = inodeAt(view, p);
    if (!inode) throw new LayerFsError('ERR_NOT_FOUND', `no such path in this state: ${p.toString()}`, { path: p.toString() });
    walk(p, inode);
  }
  return r;
}
