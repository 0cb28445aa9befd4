/**
 * What differs between two inode records as a diff reports it (the `fields` of a DiffEntry).
 */
import { InodeKind, sameXattrs, type Inode } from '../store/tree/inode.js';
import { dirContent, sameId } from './diff-state.js';

export type ChangedField = 'content' | 'kind' | 'mode' | 'owner' | 'mtime' | 'target' | 'xattrs' | 'links';

const EMPTY = Buffer.alloc(0);
const FIELD_ORDER: ChangedField[] = ['content', 'kind', 'mode', 'owner', 'mtime', 'target', 'xattrs', 'links'];

/** Same kind and same content (file content, symlink target, device number). */
export function sameContent(a: Inode, b: Inode): boolean {
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case InodeKind.File:
      return a.form === b.form && a.size === b.size && sameId(a.content, b.content);
    case InodeKind.Symlink:
      return (a.target ?? EMPTY).equals(b.target ?? EMPTY);
    case InodeKind.CharDev:
    case InodeKind.BlockDev:
      return (a.rdev ?? 0) === (b.rdev ?? 0);
    case InodeKind.Dir:
      return sameId(dirContent(a), dirContent(b));
    default:
      return true;
  }
}

/**
 * What differs between two records as the user sees them. Parents are not a field (a path
 * change is a rename, a name count change is `links`); for directories the name tree is not a
 * field, and an mtime change alone (a side effect of entries changing) does not count.
 */
export function changedFields(a: Inode, b: Inode): ChangedField[] {
  const f = new Set<ChangedField>();
  if (a.kind !== b.kind) f.add('kind');
  else if (a.kind === InodeKind.Symlink) {
    if (!sameContent(a, b)) f.add('target');
  } else if (a.kind !== InodeKind.Dir && !sameContent(a, b)) f.add('content');
  if (a.mode !== b.mode) f.add('mode');
  if (a.uid !== b.uid || a.gid !== b.gid) f.add('owner');
  if (a.mtimeNs !== b.mtimeNs) f.add('mtime');
  if (!sameXattrs(a.xattrs, b.xattrs)) f.add('xattrs');
  if (a.kind === b.kind && a.kind !== InodeKind.Dir && (a.parents?.length ?? 0) !== (b.parents?.length ?? 0)) f.add('links');
  if (a.kind === InodeKind.Dir && b.kind === InodeKind.Dir && f.size === 1 && f.has('mtime')) return [];
  return FIELD_ORDER.filter((x) => f.has(x));
}
