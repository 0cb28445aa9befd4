/**
 * apply: brings the changes from a base state to a state into an existing directory (often a
 * git work tree). Every changed path is checked first — what is on disk must be the base's
 * version (or already the new one) — and only when nothing conflicts is anything written: each
 * file and symlink under a temporary name beside it, then renamed into place. Paths are built
 * from validated stored names and every parent is checked to be a real directory (never a
 * symlink), so nothing is written outside the directory.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readlinkSync, readSync, renameSync, rmdirSync, symlinkSync, unlinkSync, writeSync, constants as fsc } from 'node:fs';
import { resolve } from 'node:path';
import { LayerFsError } from '../errors.js';
import { setTimes } from '../native/xattr.js';
import { checkStoredName } from '../store/export.js';
import { InodeKind } from '../store/tree/inode.js';
import type { FsView } from '../store/tree/view.js';
import type { Store } from '../store/store.js';
import { allDiffEntries, inodeAt, pathFilters, underAny } from './patch.js';

export interface ApplyOptions {
  /** Check only: report what would change and any conflicts, write nothing. */
  check?: boolean;
  /** Stage the written paths in the git index (the directory must be a git work tree). */
  git?: boolean;
  /** Apply even though the git work tree has uncommitted changes. */
  force?: boolean;
  /** Only changes at or below these paths. */
  paths?: string[];
}

export interface ApplyResult {
  outcome: 'Applied' | 'Checked' | 'Conflicts';
  target: string;
  /** Paths written, removed or given a new mode (or that would be, for Checked). */
  changes: { path: string; change: 'write' | 'remove' | 'mkdir' | 'chmod' }[];
  /** Paths whose content on disk is neither the base's nor the new state's. */
  conflicts: { path: string; reason: string }[];
  /** Directories left in place because they hold files the base does not know. */
  kept: string[];
  /** FIFOs and devices, which apply does not create. */
  skipped: string[];
}

type NodeKind = 'absent' | 'file' | 'symlink' | 'dir' | 'special';
export interface Node {
  kind: NodeKind;
  mode: number;
  /** A symlink's target. */
  bytes?: () => Buffer;
  /** A file's size and content, piece by piece (never held whole). */
  size?: number;
  pieces?: () => Iterable<Buffer>;
  /** A state's files: their mtime, given back by restore. */
  mtimeNs?: bigint;
}

const ABSENT: Node = { kind: 'absent', mode: 0 };

export function stateNode(view: FsView, path: Buffer): Node {
  const n = inodeAt(view, path);
  if (!n) return ABSENT;
  switch (n.kind) {
    case InodeKind.Dir:
      return { kind: 'dir', mode: n.mode };
    case InodeKind.File:
      return { kind: 'file', mode: n.mode, size: n.size, pieces: () => view.content(n), mtimeNs: n.mtimeNs };
    case InodeKind.Symlink:
      return { kind: 'symlink', mode: 0o777, bytes: () => n.target! };
    default:
      return { kind: 'special', mode: n.mode };
  }
}

export function diskNode(abs: Buffer): Node {
  let st;
  try {
    st = lstatSync(abs);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return ABSENT;
    throw e;
  }
  if (st.isDirectory()) return { kind: 'dir', mode: st.mode & 0o7777 };
  if (st.isSymbolicLink()) return { kind: 'symlink', mode: 0o777, bytes: () => readlinkSync(abs, { encoding: 'buffer' }) };
  if (st.isFile()) return { kind: 'file', mode: st.mode & 0o7777, size: st.size, pieces: () => filePieces(abs) };
  return { kind: 'special', mode: st.mode & 0o7777 };
}

/** A file's bytes piece by piece. */
function* filePieces(abs: Buffer): Generator<Buffer> {
  const fd = openSync(abs, fsc.O_RDONLY | fsc.O_NOFOLLOW);
  try {
    const buf = Buffer.allocUnsafe(1024 * 1024);
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) yield buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** Whether two piece streams hold the same bytes, however they are cut. */
function samePieces(a: Iterable<Buffer>, b: Iterable<Buffer>): boolean {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  let pa = Buffer.alloc(0);
  let pb = Buffer.alloc(0);
  try {
    for (;;) {
      if (pa.length === 0) {
        const r = ia.next();
        pa = r.done ? Buffer.alloc(0) : Buffer.from(r.value);
        if (r.done && pb.length === 0) return ib.next().done === true;
        if (r.done) return false;
      }
      if (pb.length === 0) {
        const r = ib.next();
        if (r.done) return false;
        pb = Buffer.from(r.value);
      }
      const n = Math.min(pa.length, pb.length);
      if (!pa.subarray(0, n).equals(pb.subarray(0, n))) return false;
      pa = pa.subarray(n);
      pb = pb.subarray(n);
    }
  } finally {
    ia.return?.();
    ib.return?.();
  }
}

/** Same kind and bytes (modes aside: a mode difference is never a conflict). */
export function sameContent(a: Node, b: Node): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'symlink') return a.bytes!().equals(b.bytes!());
  if (a.kind === 'file') return a.size === b.size && samePieces(a.pieces!(), b.pieces!());
  return true;
}

/** DIR/path as bytes, after checking each stored name and that no existing parent is a symlink. */
export function safePath(root: Buffer, path: Buffer): Buffer {
  const parts = path.toString('latin1').split('/').map((p) => Buffer.from(p, 'latin1'));
  let cur = root;
  for (let i = 0; i < parts.length; i++) {
    checkStoredName(parts[i]!, path.toString());
    cur = Buffer.concat([cur, Buffer.from('/'), parts[i]!]);
    if (i === parts.length - 1) break;
    let st;
    try {
      st = lstatSync(cur);
    } catch {
      continue;
    }
    if (!st.isDirectory()) throw new LayerFsError('ERR_UNSAFE_PATH', `${cur.toString()} is not a directory (a symlink or file) on the way to ${path.toString()}`, { path: path.toString(), hint: 'apply never follows symlinks; move it away or apply elsewhere' });
  }
  return cur;
}

export interface Step {
  path: Buffer;
  abs: Buffer;
  want: Node;
  disk: Node;
}

function gitTopLevel(dir: string): string | undefined {
  const r = spawnSync('git', ['-C', dir, 'rev-parse', '--show-toplevel'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function checkGit(dir: string, opts: ApplyOptions): string | undefined {
  const top = gitTopLevel(dir);
  if (opts.git && !top) throw new LayerFsError('ERR_INVALID_ARGUMENT', `${dir} is not in a git work tree`, { path: dir, hint: 'drop --git, or run `git init` there first' });
  if (!top || opts.force) return top;
  const r = spawnSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no', '--', '.'], { encoding: 'utf8' });
  if (r.status !== 0) throw new LayerFsError('ERR_NATIVE_IO', `git status failed in ${dir}: ${r.stderr.trim()}`, { path: dir });
  if (r.stdout.trim()) throw new LayerFsError('ERR_DIRTY', `the git work tree ${top} has uncommitted changes`, { path: top, hint: 'commit or stash them first, or pass --force' });
  return top;
}

/** Plans the steps, or returns the conflicts. */
function plan(store: Store, baseRoot: Buffer, stateRoot: Buffer, root: Buffer, filters: Buffer[], r: ApplyResult): Step[] {
  const base = store.view(baseRoot);
  const next = store.view(stateRoot);
  const seen = new Set<string>();
  const steps: Step[] = [];
  for (const e of allDiffEntries(store, baseRoot, stateRoot)) {
    for (const path of e.oldPathBytes ? [e.oldPathBytes, e.pathBytes] : [e.pathBytes]) {
      const key = path.toString('latin1');
      if (path.length === 0 || seen.has(key) || !underAny(path, filters)) continue;
      seen.add(key);
      const was = stateNode(base, path);
      const want = stateNode(next, path);
      if (was.kind === 'special' || want.kind === 'special') {
        r.skipped.push(path.toString());
        continue;
      }
      const abs = safePath(root, path);
      const disk = diskNode(abs);
      if (sameContent(disk, want)) {
        if (want.kind !== 'absent' && want.kind !== 'symlink' && disk.mode !== want.mode) steps.push({ path, abs, want, disk });
        continue;
      }
      if (!sameContent(disk, was)) {
        r.conflicts.push({ path: path.toString(), reason: disk.kind === 'absent' ? `${was.kind} of the base is missing` : was.kind === 'absent' ? `a ${disk.kind} that the base does not have is in the way` : `the ${disk.kind} on disk differs from the base` });
        continue;
      }
      steps.push({ path, abs, want, disk });
    }
  }
  return steps;
}

function writeAtomically(step: Step, keepTimes: boolean): void {
  const tmp = Buffer.concat([step.abs, Buffer.from(`.layerfs-${process.pid}-${randomBytes(4).toString('hex')}`)]);
  if (step.want.kind === 'symlink') symlinkSync(step.want.bytes!(), tmp);
  else {
    const fd = openSync(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600);
    try {
      for (const b of step.want.pieces!()) {
        let off = 0;
        while (off < b.length) off += writeSync(fd, b, off, b.length - off);
      }
    } finally {
      closeSync(fd);
    }
    chmodSync(tmp, step.want.mode);
    if (keepTimes && step.want.mtimeNs !== undefined) setTimes(tmp, step.want.mtimeNs, step.want.mtimeNs);
  }
  try {
    renameSync(tmp, step.abs);
  } catch (e) {
    unlinkSync(tmp);
    throw e;
  }
}

/** Writes the planned steps: removals deepest first, then directories and files shallowest first. */
export function writeSteps(steps: Step[], r: Pick<ApplyResult, 'changes' | 'kept'>, keepTimes = false): void {
  const byDepth = (a: Step, b: Step) => Buffer.compare(a.path, b.path);
  const removals = steps.filter((s) => s.disk.kind !== 'absent' && (s.want.kind === 'absent' || s.want.kind !== s.disk.kind)).sort(byDepth).reverse();
  for (const s of removals) {
    if (s.disk.kind === 'dir') {
      try {
        rmdirSync(s.abs);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOTEMPTY') throw e;
        r.kept.push(s.path.toString());
        continue;
      }
    } else if (s.want.kind === 'absent' || s.want.kind === 'dir') unlinkSync(s.abs);
    if (s.want.kind === 'absent') r.changes.push({ path: s.path.toString(), change: 'remove' });
  }
  for (const s of steps.filter((x) => x.want.kind !== 'absent').sort(byDepth)) {
    if (s.want.kind === 'dir') {
      if (diskNode(s.abs).kind === 'dir') chmodSync(s.abs, s.want.mode);
      else mkdirSync(s.abs, { mode: s.want.mode });
      r.changes.push({ path: s.path.toString(), change: s.disk.kind === 'dir' ? 'chmod' : 'mkdir' });
    } else if (s.disk.kind === s.want.kind && sameContent(s.disk, s.want)) {
      chmodSync(s.abs, s.want.mode);
      r.changes.push({ path: s.path.toString(), change: 'chmod' });
    } else {
      writeAtomically(s, keepTimes);
      r.changes.push({ path: s.path.toString(), change: 'write' });
    }
  }
}

/** Brings the changes baseRoot → stateRoot into `dir`; see the module comment. */
export function applyState(store: Store, baseRoot: Buffer, stateRoot: Buffer, dir: string, opts: ApplyOptions = {}): ApplyResult {
  const target = resolve(dir);
  let st;
  try {
    st = lstatSync(target);
  } catch {
    throw new LayerFsError('ERR_NOT_FOUND', `no directory ${target}`, { path: target, hint: 'apply writes into an existing directory; use `layerfs export` for a new one' });
  }
  if (!st.isDirectory()) throw new LayerFsError('ERR_NOT_A_DIRECTORY', `${target} is not a directory`, { path: target });
  const top = checkGit(target, opts);
  const r: ApplyResult = { outcome: 'Applied', target, changes: [], conflicts: [], kept: [], skipped: [] };
  const steps = store.read(() => plan(store, baseRoot, stateRoot, Buffer.from(target), pathFilters(opts.paths), r));
  if (r.conflicts.length > 0) return { ...r, outcome: 'Conflicts' };
  if (opts.check) {
    for (const s of steps) r.changes.push({ path: s.path.toString(), change: s.want.kind === 'absent' ? 'remove' : s.want.kind === 'dir' ? (s.disk.kind === 'dir' ? 'chmod' : 'mkdir') : sameContent(s.disk, s.want) ? 'chmod' : 'write' });
    return { ...r, outcome: 'Checked' };
  }
  store.read(() => writeSteps(steps, r));
  if (opts.git && top && r.changes.length > 0) {
    const paths = r.changes.filter((c) => c.change !== 'mkdir').map((c) => c.path);
    // Paths on stdin, NUL-separated and literal: no argv limit, no glob characters interpreted.
    const g = spawnSync('git', ['-C', target, 'add', '-A', '--pathspec-from-file=-', '--pathspec-file-nul'], {
      input: paths.map((p) => `${p}\0`).join(''),
      encoding: 'utf8',
      env: { ...process.env, GIT_LITERAL_PATHSPECS: '1' },
    });
    if (g.status !== 0) throw new LayerFsError('ERR_NATIVE_IO', `git add failed: ${g.stderr.trim()}`, { path: target, hint: 'the files are written; stage them by hand' });
  }
  return r;
}
