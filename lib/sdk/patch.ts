/**
 * Patches between states, and between a Workspace's base and its files: the changed paths come
 * from the tree diff (or the Workspace's status), each turned into the pair of versions git
 * would compare, and each pair into one git patch section.
 */
import { closeSync, lstatSync, openSync, readFileSync, readlinkSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { BIG_FILE, diffStates, formatFilePatch, gitBlobId, gitBlobIdOf, isBig, similarityScore, gitFileMode, GIT_LINK, type DiffEntry, type FilePair, type FileStat, type PatchOptions, type PatchSide } from '../history/index.js';
import { InodeKind, type Inode } from '../store/tree/inode.js';
import { ROOT_SERIAL } from '../store/tree/root.js';
import type { FsView } from '../store/tree/view.js';
import type { Store } from '../store/store.js';
import { splitStatePath } from './paths.js';

export type { FileStat, PatchOptions };
export { formatStat } from '../history/index.js';

export interface PatchRequest extends PatchOptions {
  /** Only changes at or below these paths (relative to the root). */
  paths?: string[];
}

export interface PatchResult {
  /** The patch, exact bytes (file contents are not re-encoded). */
  patch: Buffer;
  files: FileStat[];
  /** Changed entries git cannot express (FIFOs, devices), by path. */
  skipped: string[];
}

/** Bytes read once, however often a pair asks for them. */
function once(read: () => Buffer): () => Buffer {
  let v: Buffer | undefined;
  return () => (v ??= read());
}

/** Normalised path filters: byte strings without leading or trailing slashes. */
export function pathFilters(paths: string[] | undefined): Buffer[] {
  return (paths ?? []).map((p) => Buffer.from(splitStatePath(p).map((x) => x.toString('latin1')).join('/'), 'latin1'));
}

export function underAny(path: Buffer, filters: Buffer[]): boolean {
  if (filters.length === 0) return true;
  return filters.some((f) => f.length === 0 || path.equals(f) || (path.length > f.length && path[f.length] === 0x2f && path.subarray(0, f.length).equals(f)));
}

function onceText(f: () => string): () => string {
  let v: string | undefined;
  return () => (v ??= f());
}

/** A file's bytes piece by piece. */
function* filePieces(abs: string): Generator<Buffer> {
  const fd = openSync(abs, 'r');
  try {
    const buf = Buffer.allocUnsafe(1024 * 1024);
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) yield buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

/** Directories already looked up, per view: the paths of a diff share most of their parents. */
const dirCache = new WeakMap<FsView, Map<string, Inode | null>>();

function dirAt(view: FsView, path: Buffer): Inode | null {
  let cache = dirCache.get(view);
  if (!cache) dirCache.set(view, (cache = new Map()));
  const key = path.toString('latin1');
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const n = inodeAt(view, path) ?? null;
  const dir = n && n.kind === InodeKind.Dir ? n : null;
  cache.set(key, dir);
  return dir;
}

/** The entry at a path of a state (validated name bytes, '/'-joined), or undefined when nothing is there. */
export function inodeAt(view: FsView, path: Buffer): Inode | undefined {
  if (path.length === 0) return view.inode(ROOT_SERIAL);
  const slash = path.lastIndexOf(0x2f);
  const dir = slash < 0 ? view.inode(ROOT_SERIAL) : dirAt(view, path.subarray(0, slash));
  if (!dir || dir.kind !== InodeKind.Dir) return undefined;
  const serial = view.child(dir, path.subarray(slash + 1));
  return serial === undefined ? undefined : view.inode(serial);
}

/** A state's version of a path as git sees it; undefined for directories and absent paths. */
export function stateSide(view: FsView, path: Buffer): PatchSide | 'special' | undefined {
  const inode = inodeAt(view, path);
  if (!inode || inode.kind === InodeKind.Dir) return undefined;
  if (inode.kind === InodeKind.Symlink) return { path, mode: GIT_LINK, size: inode.size, read: () => inode.target!, blobId: () => gitBlobId(inode.target!) };
  if (inode.kind !== InodeKind.File) return 'special';
  const read = once(() => Buffer.concat([...view.content(inode)]));
  return { path, mode: gitFileMode(inode.mode), size: inode.size, read, blobId: onceText(() => (inode.size > BIG_FILE ? gitBlobIdOf(inode.size, view.content(inode)) : gitBlobId(read()))) };
}

/** A file's version on disk (never following a symlink). */
export function diskSide(root: string, path: Buffer): PatchSide | 'special' | undefined {
  const abs = join(root, path.toString());
  let st;
  try {
    st = lstatSync(abs);
  } catch {
    return undefined;
  }
  if (st.isDirectory()) return undefined;
  if (st.isSymbolicLink()) {
    const target = readlinkSync(abs, { encoding: 'buffer' });
    return { path, mode: GIT_LINK, size: target.length, read: () => target, blobId: () => gitBlobId(target) };
  }
  if (!st.isFile()) return 'special';
  const read = once(() => readFileSync(abs));
  return { path, mode: gitFileMode(st.mode), size: st.size, read, blobId: onceText(() => (st.size > BIG_FILE ? gitBlobIdOf(st.size, filePieces(abs)) : gitBlobId(read()))) };
}

type Side = PatchSide | 'special' | undefined;

/** The git file pairs of one changed path (two when its kind changed), noting what git cannot hold. */
function pairsOf(oldSide: Side, newSide: Side, skipped: string[], display: string): FilePair[] {
  if (oldSide === 'special' || newSide === 'special') skipped.push(display);
  const o = oldSide === 'special' ? undefined : oldSide;
  const n = newSide === 'special' ? undefined : newSide;
  if (!o && !n) return [];
  if (o && n && (o.mode === GIT_LINK) !== (n.mode === GIT_LINK)) return [{ old: o }, { new: n }];
  if (o && n && o.mode === n.mode && o.size === n.size && (isBig(o) ? o.blobId() === n.blobId() : o.read().equals(n.read()))) return [];
  return [{ old: o, new: n }];
}

/**
 * The file pairs of some changed paths, each compared as it is on both sides (so a path that
 * was replaced, or re-occupied after a rename, is a plain change as git shows it), then a
 * deletion and an addition that the change list calls a rename joined into one rename pair
 * when they are similar enough for git to call it one.
 */
export function pairsOfPaths(touched: Buffer[], renames: [Buffer, Buffer][], oldAt: (p: Buffer) => Side, newAt: (p: Buffer) => Side, skipped: string[]): FilePair[] {
  const seen = new Set<string>();
  const deleted = new Map<string, FilePair>();
  const added = new Map<string, FilePair>();
  const pairs: FilePair[] = [];
  for (const path of touched) {
    const key = path.toString('latin1');
    if (seen.has(key)) continue;
    seen.add(key);
    for (const p of pairsOf(oldAt(path), newAt(path), skipped, path.toString())) {
      pairs.push(p);
      if (!p.new) deleted.set(key, p);
      if (!p.old) added.set(key, p);
    }
  }
  const join = (from: string, to: string): void => {
    const d = deleted.get(from)!;
    added.get(to)!.old = d.old;
    pairs.splice(pairs.indexOf(d), 1);
    deleted.delete(from);
    added.delete(to);
  };
  for (const [from, to] of renames) {
    const d = deleted.get(from.toString('latin1'));
    const a = added.get(to.toString('latin1'));
    if (!d || !a || (d.old!.mode === GIT_LINK) !== (a.new!.mode === GIT_LINK) || similarity(d.old!, a.new!) < 50) continue;
    join(from.toString('latin1'), to.toString('latin1'));
  }
  // Exact renames git finds by content alone: a deletion and an addition of the same blob.
  const byBlob = new Map<string, string[]>();
  const blobKey = (x: PatchSide) => `${x.mode === GIT_LINK ? 'l' : 'f'}${x.blobId()}`;
  for (const [key, d] of deleted) byBlob.set(blobKey(d.old!), [...(byBlob.get(blobKey(d.old!)) ?? []), key]);
  for (const [key, a] of [...added]) {
    const from = byBlob.get(blobKey(a.new!))?.shift();
    if (from !== undefined) join(from, key);
  }
  return sortPairs(pairs);
}

function similarity(a: PatchSide, b: PatchSide): number {
  if (isBig(a) || isBig(b)) return a.size === b.size && a.blobId() === b.blobId() ? 100 : 0;
  return similarityScore(a.read(), b.read());
}

/** Every entry of the diff of two roots, all pages. */
export function allDiffEntries(store: Store, fromRoot: Buffer, toRoot: Buffer): DiffEntry[] {
  const out: DiffEntry[] = [];
  let after: string | undefined;
  do {
    const p = diffStates(store, fromRoot, toRoot, { after, limit: 10_000 });
    out.push(...p.entries);
    after = p.next;
  } while (after !== undefined);
  return out;
}

/** The file pairs between two states, in git's order (by path). */
export function statePairs(store: Store, fromRoot: Buffer, toRoot: Buffer, filters: Buffer[], skipped: string[]): FilePair[] {
  const a = store.view(fromRoot);
  const b = store.view(toRoot);
  const touched: Buffer[] = [];
  const renames: [Buffer, Buffer][] = [];
  for (const e of allDiffEntries(store, fromRoot, toRoot)) {
    if (e.kind === 'dir' && e.change !== 'modified') continue;
    if (e.change === 'modified' && !e.fields.some((f) => f === 'content' || f === 'kind' || f === 'mode' || f === 'target')) continue;
    if (underAny(e.pathBytes, filters)) touched.push(e.pathBytes);
    if (e.oldPathBytes && underAny(e.oldPathBytes, filters)) touched.push(e.oldPathBytes);
    if (e.oldPathBytes) renames.push([e.oldPathBytes, e.pathBytes]);
  }
  return pairsOfPaths(touched, renames, (p) => stateSide(a, p), (p) => stateSide(b, p), skipped);
}

function pairPath(p: FilePair): Buffer {
  return (p.new ?? p.old)!.path;
}

export function sortPairs(pairs: FilePair[]): FilePair[] {
  // Stable: a deletion stays before the addition of the same path.
  return pairs.map((p, i) => ({ p, i })).sort((x, y) => Buffer.compare(pairPath(x.p), pairPath(y.p)) || x.i - y.i).map((x) => x.p);
}

/** Formats pairs one file section at a time (a large patch is never held whole). */
export function* patchSections(pairs: FilePair[], opts: PatchOptions): Generator<{ text: Buffer; stat: FileStat }> {
  for (const p of pairs) {
    const s = formatFilePatch(p, opts);
    yield { text: Buffer.from(s.text, 'latin1'), stat: s.stat };
  }
}

/** Formats pairs into one patch. */
export function formatPairs(pairs: FilePair[], opts: PatchOptions, skipped: string[]): PatchResult {
  const parts: Buffer[] = [];
  const files: FileStat[] = [];
  for (const s of patchSections(pairs, opts)) {
    parts.push(s.text);
    files.push(s.stat);
  }
  return { patch: Buffer.concat(parts), files, skipped };
}

/** Changed paths of a Workspace (as its status lists them) into pairs: base state against the files. */
export function workspacePairs(
  store: Store,
  baseRoot: Buffer,
  dir: string,
  changes: { change: string; path: string; oldPath?: string }[],
  filters: Buffer[],
  skipped: string[],
): FilePair[] {
  const view = store.view(baseRoot);
  const touched: Buffer[] = [];
  const renames: [Buffer, Buffer][] = [];
  for (const c of changes) {
    const path = Buffer.from(c.path);
    if (underAny(path, filters)) touched.push(path);
    if (c.oldPath === undefined) continue;
    const oldPath = Buffer.from(c.oldPath);
    if (underAny(oldPath, filters)) touched.push(oldPath);
    renames.push([oldPath, path]);
  }
  return pairsOfPaths(touched, renames, (p) => stateSide(view, p), (p) => diskSide(dir, p), skipped);
}
