/** lib/store: the Store file, content-addressed objects, namespace trees, import and export. */
export { Store } from './handle.js';
export { createStoreFile, openStoreFile, type Db, type StoreInfo } from './store.js';
export { APPLICATION_ID, FORMAT_VERSION, PACK_TARGET, CHUNK_PACK_TARGET } from './schema.js';
export { ObjectKind, ObjectReader, ObjectWriter, idOf, DOMAIN_TAGS, type WriteStats, emptyWriteStats } from './objects.js';
export { Codec, DELTA_MAX_BASES } from './codec.js';
export { FsView, type DirEntry } from './tree/view.js';
export { TreeKind, lookup, type PageIO, type TreeNode } from './tree/pages.js';
export { ContentForm, INODE_KIND_NAMES, InodeKind, kindLetter, type Inode, type Xattr } from './tree/inode.js';
export { importTree, buildNamespace, SMALL_FILE_THRESHOLD, type ImportProgress, type ImportStats } from './import/import.js';
export { readRange, clampRange, type ByteRange } from './read-range.js';
export { exportTree, checkStoredName, type ExportStats, type ExportOptions } from './export.js';
export { NamespaceEditor } from './tree/editor.js';
export { walkTree, type WalkEntry } from './import/walk.js';
export { encodeInode, decodeInode } from './tree/inode.js';
export { ROOT_SERIAL } from './tree/root.js';
export { verifyStore, type VerifyReport } from './verify.js';
export { inodeFromScan, statSignature, SCAN_KINDS } from './import/entry.js';
export { analyzeDedup, type DedupReport, type StateUsage, type Contributor } from './analyze.js';
