// In-place 4 KiB file edits of the edit families (edit_length_preserving, edit_length_changing),
// the restore between them, a streaming comparison of a stored file with one on disk, and the
// 10-file edit of one commit in the development loops (branch_development,
// multi_workspace_development).

import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '../../lib/sdk/index.js';
import { seededBytes } from '../../test/helpers/random.js';
import { applyEdits, editSet, treeParams, type Edit } from '../fixtures/tree.js';

export const EDIT_BYTES = 4096;
export const LENGTH_PRESERVING_OPS = ['overwrite-head', 'overwrite-middle', 'overwrite-tail'] as const;
export const LENGTH_CHANGING_OPS = ['append', 'insert', 'delete', 'prepend', 'truncate', 'zero-extend'] as const;
export type FileOp = (typeof LENGTH_PRESERVING_OPS)[number] | (typeof LENGTH_CHANGING_OPS)[number];
export const ALL_OPS: readonly FileOp[] = [...LENGTH_PRESERVING_OPS, ...LENGTH_CHANGING_OPS];

const BLOCK = 4 * 1024 * 1024;

/** Moves bytes [from, from+len) to [to, to+len) inside an open file, safe for overlap. */
function moveRange(fd: number, from: number, to: number, len: number): void {
  if (len <= 0 || from === to) return;
  const buf = Buffer.allocUnsafe(Math.min(BLOCK, len));
  if (to > from) {
    // Shifting right: copy from the end backwards so nothing is overwritten before it is read.
    let left = len;
    while (left > 0) {
      const n = Math.min(buf.length, left);
      left -= n;
      readFully(fd, buf, n, from + left);
      writeFully(fd, buf, n, to + left);
    }
  } else {
    let done = 0;
    while (done < len) {
      const n = Math.min(buf.length, len - done);
      readFully(fd, buf, n, from + done);
      writeFully(fd, buf, n, to + done);
      done += n;
    }
  }
}

function readFully(fd: number, buf: Buffer, n: number, pos: number): void {
  let off = 0;
  while (off < n) {
    const k = fs.readSync(fd, buf, off, n - off, pos + off);
    if (k === 0) throw new Error(`short read at ${pos + off}`);
    off += k;
  }
}

function writeFully(fd: number, buf: Buffer, n: number, pos: number): void {
  let off = 0;
  while (off < n) off += fs.writeSync(fd, buf, off, n - off, pos + off);
}

export interface OpResult {
  op: FileOp;
  /** Where the edit happened, in the file as it was before. */
  offset: number;
  sizeBefore: number;
  sizeAfter: number;
}

/**
 * Applies one 4 KiB edit in place (same inode, as an editor writing in place or an agent's
 * `write` would), then sets the mtime to `mtimeSec` so that every edit has a distinct stat even
 * when two land within one timestamp tick. The new bytes are seeded by (seed, op).
 */
export function applyFileOp(file: string, op: FileOp, seed: number, mtimeSec: number): OpResult {
  const size = fs.statSync(file).size;
  const data = seededBytes(seed, EDIT_BYTES, 0xed17 + ALL_OPS.indexOf(op));
  const mid = Math.floor(size / 2 / EDIT_BYTES) * EDIT_BYTES;
  const fd = fs.openSync(file, 'r+');
  let offset = 0;
  let sizeAfter = size;
  try {
    switch (op) {
      case 'overwrite-head':
        offset = 0;
        writeFully(fd, data, EDIT_BYTES, 0);
        break;
      case 'overwrite-middle':
        offset = mid;
        writeFully(fd, data, EDIT_BYTES, mid);
        break;
      case 'overwrite-tail':
        offset = size - EDIT_BYTES;
        writeFully(fd, data, EDIT_BYTES, offset);
        break;
      case 'append':
        offset = size;
        writeFully(fd, data, EDIT_BYTES, size);
        sizeAfter = size + EDIT_BYTES;
        break;
      case 'insert':
      case 'prepend':
        offset = op === 'insert' ? mid : 0;
        moveRange(fd, offset, offset + EDIT_BYTES, size - offset);
        writeFully(fd, data, EDIT_BYTES, offset);
        sizeAfter = size + EDIT_BYTES;
        break;
      case 'delete':
        offset = mid;
        moveRange(fd, mid + EDIT_BYTES, mid, size - mid - EDIT_BYTES);
        fs.ftruncateSync(fd, size - EDIT_BYTES);
        sizeAfter = size - EDIT_BYTES;
        break;
      case 'truncate':
        offset = size - EDIT_BYTES;
        fs.ftruncateSync(fd, offset);
        sizeAfter = offset;
        break;
      case 'zero-extend':
        offset = size;
        fs.ftruncateSync(fd, size + EDIT_BYTES);
        sizeAfter = size + EDIT_BYTES;
        break;
    }
    fs.futimesSync(fd, mtimeSec, mtimeSec);
  } finally {
    fs.closeSync(fd);
  }
  return { op, offset, sizeBefore: size, sizeAfter };
}

/**
 * Puts `original`'s bytes back into `file` in place (same inode: overwrite, then truncate to the
 * original length) and sets its mtime, so that every op of an edit cell starts from the same
 * content. Returns the bytes written.
 */
export function restoreFile(file: string, original: string, mtimeSec: number): number {
  const size = fs.statSync(original).size;
  const src = fs.openSync(original, 'r');
  const dst = fs.openSync(file, 'r+');
  try {
    const buf = Buffer.allocUnsafe(Math.min(BLOCK, Math.max(1, size)));
    let pos = 0;
    while (pos < size) {
      const n = Math.min(buf.length, size - pos);
      readFully(src, buf, n, pos);
      writeFully(dst, buf, n, pos);
      pos += n;
    }
    fs.ftruncateSync(dst, size);
    fs.futimesSync(dst, mtimeSec, mtimeSec);
  } finally {
    fs.closeSync(src);
    fs.closeSync(dst);
  }
  return size;
}

/**
 * Streams a stored file and compares it with a file on disk, piece by piece (bounded memory).
 * Returns null when equal, else a description of the first difference.
 */
export function compareStored(c: Client, ref: string, relPath: string, file: string): string | null {
  const size = fs.statSync(file).size;
  const fd = fs.openSync(file, 'r');
  try {
    let pos = 0;
    let buf = Buffer.alloc(0);
    for (const piece of c.readFile(ref, relPath)) {
      if (pos + piece.length > size) return `stored ${relPath} is longer than ${size} bytes`;
      if (buf.length < piece.length) buf = Buffer.allocUnsafe(Math.max(piece.length, 1 << 16));
      readFully(fd, buf, piece.length, pos);
      if (!piece.equals(buf.subarray(0, piece.length))) return `${relPath} differs within bytes ${pos}..${pos + piece.length}`;
      pos += piece.length;
    }
    return pos === size ? null : `stored ${relPath} has ${pos} bytes, the file ${size}`;
  } finally {
    fs.closeSync(fd);
  }
}


/**
 * The edit of one commit in a development loop: `k` files of the tree fixture, `editBytes` each,
 * mixed overwrite / insert / append (fixtures/edits.ts), seeded by `seed`. Applied to `root`, then
 * every edited file gets the mtime `mtimeSec` (distinct per commit, so that a file edited twice
 * with the same size never keeps its old stat). Returns the edits and the full size of the edited
 * files after the edit (what a whole-file store would write).
 */
export function devEdit(root: string, files: number, seed: number, mtimeSec: number, k = 10, editBytes = 64): { edits: Edit[]; changedBytes: number } {
  const edits = editSet(treeParams(files), { k, seed, mode: 'mixed', editBytes });
  applyEdits(root, edits);
  let changedBytes = 0;
  for (const e of edits) {
    const f = path.join(root, e.relPath);
    fs.utimesSync(f, mtimeSec, mtimeSec);
    changedBytes += fs.statSync(f).size;
  }
  return { edits, changedBytes };
}


/** A new file of `mib` MiB of random bytes (incompressible, shares nothing), written 16 MiB at a time. */
export function randomFile(file: string, mib: number): void {
  const fd = fs.openSync(file, 'w');
  try {
    for (let left = mib; left > 0; left -= Math.min(left, 16)) fs.writeSync(fd, randomBytes(Math.min(left, 16) << 20));
  } finally {
    fs.closeSync(fd);
  }
}
