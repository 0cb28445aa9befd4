/**
 * Racy stat cache entries, the git way. A stat cache entry is only trustworthy if any later
 * write changes its stat; a write in the same timestamp tick as the ctime the walk saw, with the
 * same size, leaves size/mtime/ctime as they were. A commit therefore reads changed files at
 * once and marks (smudges) every entry whose read began within the tick of its ctime: its size
 * becomes SMUDGED_SIZE, which no file has, so every later walk (walkTreeAgainst, diffWalk)
 * reports it changed. The next commit reads it again and stores what it finds (an identical
 * record changes no page, so nothing is published); `workspace status` confirms it against the
 * stored record (racyUnchanged) before listing it.
 */
import { lstatSync, readlinkSync, type BigIntStats } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { getXattrs } from '../native/xattr.js';
import { WalkKind } from '../native/walk.js';
import type { ScanEntryOk } from '../native/scan.js';
import { ContentForm, idOf, InodeKind, sameXattrs, storeFileContent, type ContentSink, type Inode, type Store } from '../store/index.js';
import { cacheIsStored, cachePlan, writeCache, type StatCache } from './cache.js';
import { getWorkspace, type WorkspaceRow } from './rows.js';
import { racyWaitMs } from './record.js';

/** The size of a racy entry in the stat cache: a walk never sees it, so the entry always reads as changed. */
export const SMUDGED_SIZE = -1n;

/**
 * Smudges the File and Symlink entries of `c` marked in `changed` (they were read by this
 * commit, from wall time `readFromMs` on) whose ctime tick had not passed when the read began.
 * Returns `c` itself when none is racy, else a copy with its own size column (caches are never
 * modified in place).
 */
export function smudgeRacy(c: StatCache, changed: Uint8Array, readFromMs: number): StatCache {
  let size: BigInt64Array | null = null;
  for (let i = 1; i < c.count; i++) {
    if (!changed[i] || !readsContent(c.kind[i]!) || racyWaitMs(c.ctimeNs[i]!, readFromMs) === 0) continue;
    size ??= c.size.slice();
    size[i] = SMUDGED_SIZE;
  }
  return size ? { ...c, size } : c;
}

const readsContent = (kind: number): boolean => kind === WalkKind.File || kind === WalkKind.Symlink;

/** Whether cache entry j is racy (smudged) and holds something read for its content. */
export function isSmudged(cache: StatCache, j: number): boolean {
  return cache.size[j] === SMUDGED_SIZE && readsContent(cache.kind[j]!);
}

/** Names the objects of a file's content without storing them: the identity a commit would store. */
const NAMING: ContentSink = { add: idOf, put: () => false, putChunks: () => {} };

type View = ReturnType<Store['view']>;

/** Whether the xattrs at `path` are the record's (held sorted by name, as encodeInode writes them). */
function xattrsAsRecorded(path: Buffer, old: Inode): boolean {
  const now = getXattrs(path).map((x) => ({ name: Buffer.from(x.name), value: x.value }));
  now.sort((a, b) => Buffer.compare(a.name, b.name));
  return sameXattrs(now, old.xattrs);
}

/**
 * Whether the file or symlink at `path` still records exactly what serial `serial` records in
 * `base`: kind, permissions, owner, size, mtime, xattrs, its number of names (`names`: in the
 * Workspace now, as the commit would record them; not which directories hold them, whose serials
 * a walk may renumber while nothing of the file changed) and content (files: its content
 * identity through the commit's own content path, storeFileContent; symlinks: the target).
 * Anything that cannot be read or changes while read counts as changed.
 */
export function racyUnchanged(base: View, serial: number, path: Buffer, names: number, seen?: (st: BigIntStats) => void): boolean {
  try {
    const old = base.inode(serial);
    if ((old.parents?.length ?? old.nlink) !== names) return false;
    const st = lstatSync(path, { bigint: true });
    if (!statAsRecorded(st, old) || !contentAsRecorded(path, st, old) || !xattrsAsRecorded(path, old)) return false;
    // The stat read before the content: a write since changed its ctime at least.
    seen?.(st);
    return true;
  } catch (e) {
    if (e instanceof LayerFsError || (e as NodeJS.ErrnoException).code !== undefined) return false;
    throw e;
  }
}

/** Whether `st` has the record's kind, permissions, owner, mtime and size. */
function statAsRecorded(st: BigIntStats, old: Inode): boolean {
  const kind = st.isFile() ? InodeKind.File : st.isSymbolicLink() ? InodeKind.Symlink : undefined;
  if (kind === undefined || kind !== old.kind) return false;
  if (Number(st.mode & 0o7777n) !== old.mode || Number(st.uid) !== old.uid || Number(st.gid) !== old.gid) return false;
  return st.mtimeNs === old.mtimeNs && Number(st.size) === old.size;
}

/** Whether the symlink's target, or the file's content identity (storeFileContent), is the record's. */
function contentAsRecorded(path: Buffer, st: BigIntStats, old: Inode): boolean {
  if (old.kind === InodeKind.Symlink) return readlinkSync(path, { encoding: 'buffer' }).equals(old.target ?? Buffer.alloc(0));
  const e = { kind: 'file', path, size: Number(st.size), mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, ino: st.ino, dev: st.dev } as ScanEntryOk;
  const c = storeFileContent(e, path, NAMING);
  if (c.form !== old.form) return false;
  return c.form === ContentForm.None || c.content!.equals(old.content!);
}

/** A racy entry `workspace status` confirmed (racyUnchanged): cache entry `j`, the stat it read from wall time `fromMs` on. */
export interface Confirmed {
  j: number;
  st: BigIntStats;
  fromMs: number;
}

/**
 * Writes the racy entries a status confirmed back into the stat cache with the stat it read, as
 * `git status` refreshes git's index, so later walks find them clean instead of hashing them
 * each time. Only entries whose check began after their ctime's tick (a later write changes the
 * stat), same inode; only if the write lock is free at once (a status never waits for it) and
 * the cache and the Workspace's base are still those the status read. Returns how many were
 * written.
 */
export function refreshConfirmed(store: Store, ws: WorkspaceRow, cache: StatCache, confirmed: readonly Confirmed[]): number {
  const settled = confirmed.filter(({ j, st, fromMs }) => racyWaitMs(st.ctimeNs, fromMs) === 0 && BigInt(cache.ino[j]!) === st.ino);
  if (settled.length === 0) return 0;
  const next: StatCache = { ...cache, mode: cache.mode.slice(), size: cache.size.slice(), mtimeNs: cache.mtimeNs.slice(), ctimeNs: cache.ctimeNs.slice() };
  delete next.stored;
  const changed = new Uint8Array(cache.count);
  for (const { j, st } of settled) {
    next.mode[j] = Number(st.mode & 0o7777n);
    next.size[j] = st.size;
    next.mtimeNs[j] = st.mtimeNs;
    next.ctimeNs[j] = st.ctimeNs;
    changed[j] = 1;
  }
  const plan = cachePlan(next, { old: cache, oldIndex: Int32Array.from({ length: cache.count }, (_, i) => i), changed });
  const out = store.tryWriteSync(() => {
    if (!cacheIsStored(store, ws.id, cache) || !getWorkspace(store, ws.id)?.baseRootId.equals(ws.baseRootId)) return 0;
    writeCache(store, ws.id, plan);
    return settled.length;
  });
  return out?.value ?? 0;
}
