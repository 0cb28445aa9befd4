/**
 * A live writable overlay over one stored state: the namespace and content a FUSE mount serves.
 * One class built in layers, each a module: overlay-nodes.ts (state and inodes),
 * overlay-content.ts (metadata, xattrs, open files), overlay-namespace.ts (lookup and POSIX
 * name operations), overlay-status.ts (changes per path), overlay-commit.ts (commit and rebase).
 */
export { Overlay, type OverlayCommitOutcome, type OverlayReconciled } from './overlay-commit.js';
export { XATTR_CREATE, XATTR_REPLACE, XATTR_SIZE_MAX } from './overlay-content.js';
export { NAME_MAX, RENAME_EXCHANGE, RENAME_NOREPLACE } from './overlay-namespace.js';
export type { Attr, CommitTarget, DirEntryAttr, OverlayOptions, Owner } from './overlay-nodes.js';
export type { OverlayChange } from './overlay-status.js';
export { FsError } from './errno.js';
