// Shared by the campaign cells of issue 6 (payload, edits, dedup, footprint, branch and
// multi-Workspace development); not a cell itself. Holds: the wider slice of the Client API these
// cells use (loaded through the computed URL of _branches-sdk.ts, so a changing lib/sdk gives a
// clean error row), the git peer plumbing (environment, timed commands, .git sizes), seeded
// bytes, the in-place file edits of the edit families, and a streaming content check.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Rng } from '../lib/prng.js';
import { duBytes, timeExternal } from '../lib/cell.js';
import { applyEdits, editSet, treeParams, type Edit } from '../fixtures/tree.js';
import { loadBranchSdk, type BranchClient, type CommitReceiptShape, type InitReceiptShape } from './_branches-sdk.js';

export { median, percentile, storeFiles } from './_branches-sdk.js';
export type { CommitReceiptShape, InitReceiptShape };

export interface EntryShape {
  size: number;
  kind: string;
  [more: string]: unknown;
}
export interface DedupShape {
  states: { kind: string; label: string; logicalBytes: number; newBytes: number; files: number; [more: string]: unknown }[];
  logicalBytes: number;
  uniqueBytes: number;
  uniqueObjects: number;
  storedBytes: number;
  allocatedBytes: number;
  fileBytes: number;
  dedupRatio: number;
  [more: string]: unknown;
}
export interface AddShape {
  outcome: string;
  ms?: number;
  layer?: { id: string };
  allocatedGrowth?: number;
  semanticGrowth?: number;
  [more: string]: unknown;
}
export interface CampaignClient extends BranchClient {
  readFile(ref: string, path: string, range?: { offset?: number; length?: number }): Generator<Buffer>;
  stat(ref: string, path?: string): EntryShape;
  analyzeDedup(opts?: { layerStack?: string; top?: number }): DedupShape;
  add(branch: string, opts?: { expectedHead?: string }): AddShape;
}
export interface CampaignSdk {
  Client: { create(storePath: string): CampaignClient; connect(storePath: string): CampaignClient };
}

export async function loadCampaignSdk(): Promise<CampaignSdk> {
  const sdk = await loadBranchSdk();
  const proto = (sdk.Client as unknown as { prototype?: Record<string, unknown> }).prototype ?? {};
  const missing = ['readFile', 'stat', 'analyzeDedup', 'add', 'log'].filter((m) => typeof proto[m] !== 'function');
  if (missing.length > 0) throw new Error(`lib/sdk Client lacks ${missing.join(', ')}`);
  return sdk as unknown as CampaignSdk;
}

/** The receipt's semantic bytes (bytesInserted; semanticGrowth as a fallback). */
export function semanticOf(r: { bytesInserted?: number; semanticGrowth?: number }): number | undefined {
  return r.bytesInserted ?? r.semanticGrowth;
}

export const r1 = (x: number): number => Math.round(x * 10) / 10;
export const r3 = (x: number): number => Math.round(x * 1000) / 1000;
/** MB/s (decimal) of `bytes` moved in `ms`. */
export const mbps = (bytes: number, ms: number): number => r1(bytes / 1e6 / (ms / 1000));

// ---- git ----

/** Environment for a git peer with GIT_DIR and GIT_WORK_TREE given, ignoring global and system
 * config, with fixed identities and dates (the same for every git cell). */
export function gitEnv(gitDir: string, workTree?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GIT_DIR: gitDir,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'bench',
    GIT_AUTHOR_EMAIL: 'bench@example.invalid',
    GIT_COMMITTER_NAME: 'bench',
    GIT_COMMITTER_EMAIL: 'bench@example.invalid',
    GIT_AUTHOR_DATE: '1700000000 +0000',
    GIT_COMMITTER_DATE: '1700000000 +0000',
  };
  if (workTree !== undefined) env.GIT_WORK_TREE = workTree;
  else delete env.GIT_WORK_TREE;
  return env;
}

/** The same, for a repository found from the working directory (worktrees need that). */
export function gitEnvPlain(): NodeJS.ProcessEnv {
  const env = gitEnv('');
  delete env.GIT_DIR;
  return env;
}

/** git with automatic gc and maintenance off: a detached `gc --auto` must not run while we time. */
export const GIT = 'git -c gc.auto=0 -c maintenance.auto=false';
export const GIT_ARGS = ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false'];

/** Runs git synchronously (untimed plumbing); returns stdout, throws on a non-zero exit. */
export function git(args: string[], env: NodeJS.ProcessEnv, cwd?: string): string {
  const r = spawnSync('git', [...GIT_ARGS, ...args], { env, cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} exited ${r.status}: ${r.stderr.slice(-1500)}`);
  return r.stdout;
}

/** A git command line run under /usr/bin/time (wall ms and peak RSS), via `sh -c`. */
export function gitTimed(cmd: string, env: NodeJS.ProcessEnv, cwd?: string): { ms: number; maxRssMiB: number } {
  const r = timeExternal(['sh', '-c', cmd], { env, cwd });
  return { ms: r.ms, maxRssMiB: r.maxRssMiB };
}

/** A git command run directly (no shell, no /usr/bin/time), timed here: for loops of many commits. */
export function gitQuick(args: string[], env: NodeJS.ProcessEnv, cwd?: string): number {
  const t = performance.now();
  git(args, env, cwd);
  return performance.now() - t;
}

/** `git init && git add -A && git commit -m init` in `dir` (the untimed setup of a git peer); ms. */
export function gitInitCommit(env: NodeJS.ProcessEnv, dir: string): number {
  return gitQuick(['init', '-q'], env, dir) + gitQuick(['add', '-A'], env, dir) + gitQuick(['commit', '-q', '-m', 'init'], env, dir);
}

export { duBytes };

// ---- seeded bytes ----

/** `n` seeded random bytes (stream `stream` of seed `seed`). */
export function seededBytes(seed: number, stream: number, n: number): Buffer {
  const words = new Uint32Array(Math.ceil(n / 4));
  new Rng(seed, stream).fillWords(words);
  return Buffer.from(words.buffer, 0, n);
}

// ---- in-place file edits (edit_length_preserving, edit_length_changing) ----

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
  const data = seededBytes(seed, 0xed17 + ALL_OPS.indexOf(op), EDIT_BYTES);
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
export function compareStored(c: CampaignClient, ref: string, relPath: string, file: string): string | null {
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

/** Signed growth of a directory (du -sb) around `fn`. */
export function duGrowth<T>(dir: string, fn: () => T): { value: T; growth: number; after: number } {
  const before = duBytes(dir);
  const value = fn();
  const after = duBytes(dir);
  return { value, growth: after - before, after };
}

export function rmrf(p: string): void {
  fs.rmSync(p, { recursive: true, force: true });
}

export function scratch(tmp: string, name: string): string {
  const p = path.join(path.resolve(tmp), name);
  fs.mkdirSync(p, { recursive: true });
  return p;
}

// ---- development loops (branch_development, multi_workspace_development) ----

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
