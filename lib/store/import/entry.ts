/**
 * One scanned path → one inode record, storing its content. Shared by import and by commits
 * of materialized Workspaces, so both record exactly the same facts through one content path
 * (storeContent: files the scan returned whole from memory, larger ones streamed).
 */
import type { ScanEntryOk } from '../../native/scan.js';
import type { ObjectWriter } from '../objects.js';
import { ContentForm, InodeKind, type Inode } from '../tree/inode.js';
import { storeContent } from './content.js';

export const SCAN_KINDS: Record<string, InodeKind | undefined> = {
  file: InodeKind.File,
  dir: InodeKind.Dir,
  symlink: InodeKind.Symlink,
  fifo: InodeKind.Fifo,
  chardev: InodeKind.CharDev,
  blockdev: InodeKind.BlockDev,
};

/**
 * The record of a scanned path before its content, target or device number is filled in;
 * `parents` when the caller knows them (an import: one object per entry, no copy).
 */
export function inodeMetadata(e: ScanEntryOk, kind: InodeKind, parents?: number[]): Inode {
  const inode: Inode = {
    kind,
    mode: e.mode,
    uid: e.uid,
    gid: e.gid,
    mtimeNs: e.mtimeNs,
    size: 0,
    nlink: 1,
    form: ContentForm.None,
    content: null,
    xattrs: e.xattrs.length === 0 ? [] : e.xattrs.map((x) => ({ name: Buffer.from(x.name), value: x.value })),
  };
  if (parents !== undefined) inode.parents = parents;
  return inode;
}

/**
 * Returns null for what a state cannot hold (sockets). Directory content is left to the caller.
 * `clock.waitMs` accumulates the time spent waiting for the addon to read and hash.
 */
export async function inodeFromScan(e: ScanEntryOk, path: Buffer, w: ObjectWriter, clock?: { waitMs: number }): Promise<Inode | null> {
  const kind = SCAN_KINDS[e.kind];
  if (kind === undefined) return null;
  const inode = inodeMetadata(e, kind);
  if (kind === InodeKind.File) {
    const c = await storeContent(e, path, w, clock);
    inode.size = e.size;
    inode.form = c.form;
    inode.content = c.content;
  } else if (kind === InodeKind.Symlink) {
    inode.target = e.linkTarget ?? Buffer.alloc(0);
    inode.size = inode.target.length;
  } else if (kind !== InodeKind.Dir) {
    inode.rdev = e.rdev;
  }
  return inode;
}

/** The stat signature a Workspace's cache compares: any change means re-read. */
export function statSignature(kind: string, ino: bigint, size: number | bigint, mtimeNs: bigint, ctimeNs: bigint, mode: number): string {
  return `${kind}:${ino}:${size}:${mtimeNs}:${ctimeNs}:${mode}`;
}
