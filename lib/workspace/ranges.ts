/**
 * Range edits of files in a Workspace: replace `deleteLength` bytes at `start` with new bytes
 * (or zeros). Every edit is validated before any file is touched, and the whole set applies or
 * none of it does: the bytes an edit overwrites are kept and written back if a later edit fails.
 * A length-preserving edit is one pwrite (a 4 KiB edit of a 1 GiB file costs 4 KiB); one that
 * changes the length rewrites the file from the edit on (its tail). Both projections: a FUSE
 * Workspace is edited through its mount, so the overlay sees only the written range.
 */
import { closeSync, fstatSync, ftruncateSync, lstatSync, openSync, readSync, writeSync, constants as fsc } from 'node:fs';
import { join } from 'node:path';
import { LayerFsError } from '../errors.js';
import type { WorkspaceRow } from './rows.js';

export interface RangeEdit {
  /** Relative to the Workspace, '/'-separated. */
  path: string;
  start: number;
  deleteLength: number;
  replacement: Buffer | { zero: number };
}

const MAX_TAIL = 1024 * 1024 * 1024;

function bad(message: string, path: string, hint: string): LayerFsError {
  return new LayerFsError('ERR_INVALID_ARGUMENT', message, { path, hint });
}

function replacementLength(r: RangeEdit['replacement']): number {
  return Buffer.isBuffer(r) ? r.length : r.zero;
}

function replacementBytes(r: RangeEdit['replacement']): Buffer {
  return Buffer.isBuffer(r) ? r : Buffer.alloc(r.zero);
}

function checkPath(path: unknown): string {
  if (typeof path !== 'string' || path.length === 0) throw bad('a range edit needs a path', String(path), 'give a path relative to the Workspace');
  const parts = path.split('/');
  if (path.startsWith('/') || parts.some((p) => p === '' || p === '.' || p === '..') || path.includes('\0')) {
    throw new LayerFsError('ERR_UNSAFE_PATH', `not a path inside the Workspace: ${JSON.stringify(path)}`, { path, hint: "relative, '/'-separated, no '.', '..' or empty parts" });
  }
  return path;
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/** Checks every edit against the files as they are now; returns them grouped by file, sorted. */
function validate(ws: WorkspaceRow, edits: RangeEdit[]): Map<string, { abs: string; size: number; edits: RangeEdit[] }> {
  if (!Array.isArray(edits) || edits.length === 0) throw bad('no range edits given', '', 'pass at least one { path, start, deleteLength, replacement }');
  const files = new Map<string, { abs: string; size: number; edits: RangeEdit[] }>();
  for (const e of edits) {
    const path = checkPath(e?.path);
    if (!isCount(e.start) || !isCount(e.deleteLength)) throw bad(`${path}: start and deleteLength must be non-negative integers`, path, 'byte offsets, not line numbers');
    const r = e.replacement;
    if (!Buffer.isBuffer(r) && !(r !== null && typeof r === 'object' && isCount((r as { zero?: unknown }).zero))) {
      throw bad(`${path}: replacement must be a Buffer or { zero: n }`, path, 'use Buffer.from(text) or { zero: 4096 }');
    }
    let f = files.get(path);
    if (!f) {
      const abs = join(ws.path, path);
      let st;
      try {
        st = lstatSync(abs);
      } catch {
        throw new LayerFsError('ERR_NOT_FOUND', `no file ${path} in the Workspace`, { path, hint: 'range edits change existing regular files' });
      }
      if (!st.isFile()) throw bad(`${path} is not a regular file`, path, 'range edits change existing regular files');
      files.set(path, (f = { abs, size: st.size, edits: [] }));
    }
    f.edits.push(e);
  }
  for (const [path, f] of files) {
    f.edits.sort((a, b) => a.start - b.start);
    let end = 0;
    for (const e of f.edits) {
      if (e.start < end) throw bad(`${path}: range edits overlap at byte ${e.start}`, path, 'merge overlapping edits into one');
      end = e.start + Math.max(e.deleteLength, 1);
      if (e.start + e.deleteLength > f.size) throw bad(`${path}: edit at ${e.start} deletes past the end (${f.size} bytes)`, path, 'deleteLength must stay within the file');
    }
    const grows = f.edits.some((e) => replacementLength(e.replacement) !== e.deleteLength);
    if (grows && f.size - f.edits[0]!.start > MAX_TAIL) throw bad(`${path}: a length-changing edit would rewrite more than 1 GiB`, path, 'edit nearer the end, or keep the length');
  }
  return files;
}

function readAt(fd: number, pos: number, len: number): Buffer {
  const b = Buffer.alloc(len);
  let got = 0;
  while (got < len) {
    const n = readSync(fd, b, got, len - got, pos + got);
    if (n === 0) break;
    got += n;
  }
  return b.subarray(0, got);
}

function writeAt(fd: number, data: Buffer, pos: number): void {
  let off = 0;
  while (off < data.length) off += writeSync(fd, data, off, data.length - off, pos + off);
}

interface Undo {
  abs: string;
  size: number;
  /** Original bytes and where they were. */
  saved: { pos: number; data: Buffer }[];
}

/** Applies one file's edits; returns how to undo them. */
function applyFile(abs: string, edits: RangeEdit[]): Undo {
  const fd = openSync(abs, fsc.O_RDWR | fsc.O_NOFOLLOW);
  try {
    const size = fstatSync(fd).size;
    const undo: Undo = { abs, size, saved: [] };
    if (edits.every((e) => replacementLength(e.replacement) === e.deleteLength)) {
      for (const e of edits) {
        undo.saved.push({ pos: e.start, data: readAt(fd, e.start, e.deleteLength) });
        writeAt(fd, replacementBytes(e.replacement), e.start);
      }
      return undo;
    }
    // The length changes: everything from the first edit on is rewritten.
    const from = edits[0]!.start;
    const tail = readAt(fd, from, size - from);
    undo.saved.push({ pos: from, data: tail });
    const pieces: Buffer[] = [];
    let at = from;
    for (const e of edits) {
      pieces.push(tail.subarray(at - from, e.start - from), replacementBytes(e.replacement));
      at = e.start + e.deleteLength;
    }
    pieces.push(tail.subarray(at - from));
    const next = Buffer.concat(pieces);
    writeAt(fd, next, from);
    ftruncateSync(fd, from + next.length);
    return undo;
  } finally {
    closeSync(fd);
  }
}

function revert(u: Undo): void {
  const fd = openSync(u.abs, fsc.O_RDWR | fsc.O_NOFOLLOW);
  try {
    for (const s of u.saved.reverse()) writeAt(fd, s.data, s.pos);
    ftruncateSync(fd, u.size);
  } finally {
    closeSync(fd);
  }
}

/** Applies `edits` to files of the Workspace, all or nothing; returns the bytes written. */
export function editFileRanges(ws: WorkspaceRow, edits: RangeEdit[]): { files: number; edits: number; bytesWritten: number } {
  const files = validate(ws, edits);
  const done: Undo[] = [];
  let bytesWritten = 0;
  try {
    for (const f of files.values()) {
      const u = applyFile(f.abs, f.edits);
      done.push(u);
      bytesWritten += f.edits.every((e) => replacementLength(e.replacement) === e.deleteLength) ? f.edits.reduce((s, e) => s + e.deleteLength, 0) : f.size - f.edits[0]!.start;
    }
  } catch (e) {
    for (const u of done.reverse()) revert(u);
    throw e;
  }
  return { files: files.size, edits: edits.length, bytesWritten };
}
