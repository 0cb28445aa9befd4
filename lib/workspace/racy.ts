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
import { lstatSync, readlinkSync } from 'node:fs';
import { LayerFsError } from '../errors.js';
import { getXattrs } from '../native/xattr.js';
import { WalkKind } from '../native/walk.js';
import type { ScanEntryOk } from '../native/scan.js';
import { ContentForm, idOf, InodeKind, sameXattrs, storeFileContent, type ContentSink, type Inode, type Store } from '../store/index.js';
import type { StatCache } from './cache.js';
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
export function racyUnchanged(base: View, serial: number, path: Buffer, names: number): boolean {
  try {
    const old = base.inode(serial);
    if ((old.parents?.length ?? old.nlink) !== names) return false;
    const st = lstatSync(path, { bigint: true });
    const kind = st.isFile() ? InodeKind.File : st.isSymbolicLink() ? InodeKind.Symlink : undefined;
    if (kind === undefined || kind !== old.kind) return false;
    if (Number(st.mode & 0o7777n) !== old.mode || Number(st.uid) !== old.uid || Number(st.gid) !== old.gid) return false;
    if (st.mtimeNs !== old.mtimeNs || Number(st.size) !== old.size) return false;
    if (kind === InodeKind.Symlink) return readlinkSync(path, { encoding: 'buffer' }).equals(old.target ?? Buffer.alloc(0)) && xattrsAsRecorded(path, old);
    const e = { kind: 'file', path, size: Number(st.size), mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, ino: st.ino, dev: st.dev } as ScanEntryOk;
    const c = storeFileContent(e, path, NAMING);
    if (c.form !== old.form) return false;
    if (c.form !== ContentForm.None && !c.content!.equals(old.content!)) return false;
    return xattrsAsRecorded(path, old);
  } catch (e) {
    if (e instanceof LayerFsError || (e as NodeJS.ErrnoException).code !== undefined) return false;
    throw e;
  }
}
