/**
 * Whether a changed directory changed as a diff counts it. Its walk entry moves whenever its
 * entries come and go (mtime and ctime), but a diff counts a directory only for its own mode,
 * owner and extended attributes (history/diff-fields.ts). The stat cache holds neither owner
 * nor xattrs, so a directory whose mode stayed is compared with its stored record here: a
 * setfattr or chown in the same script as an entry change must not hide behind the mtime.
 */
import { lstatSync } from 'node:fs';
import { getXattrs } from '../native/xattr.js';
import { InodeKind, type FsView, type Inode } from '../store/index.js';

function sameXattrs(stored: Inode, abs: Buffer): boolean {
  const now = getXattrs(abs);
  if (now.length !== stored.xattrs.length) return false;
  const want = new Map(stored.xattrs.map((x) => [x.name.toString('latin1'), x.value] as const));
  return now.every((x) => want.get(Buffer.from(x.name).toString('latin1'))?.equals(x.value) === true);
}

/** `serial`: the directory's serial in `view` (the state the Workspace last matched). */
export function dirChangedItself(view: FsView, serial: number, abs: Buffer): boolean {
  let stored: Inode;
  try {
    stored = view.inode(serial);
  } catch {
    return true;
  }
  if (stored.kind !== InodeKind.Dir) return true;
  let st;
  try {
    st = lstatSync(abs);
  } catch {
    return true;
  }
  if (st.uid !== stored.uid || st.gid !== stored.gid) return true;
  return !sameXattrs(stored, abs);
}
