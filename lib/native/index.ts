/** Typed surface of the native addon: hashing, chunking, batch scans, xattrs. */
export { blake3, objectId, Blake3Hasher, DOMAIN, type DomainTag } from './hash.js';
export { chunkLengths, chunkAndHash, Chunker, gearTable, toChunkRefs, type ChunkRef } from './chunker.js';
export {
  DEFAULT_CHUNKER_PARAMS,
  DEFAULT_SMALL_FILE_THRESHOLD,
  CHUNKER_LIMITS,
  resolveParams,
  type ChunkerParams,
} from './params.js';
export { hashBuffers, MAX_THREADS, type BatchOptions, type ContentDigest, type DigestResult } from './batch.js';
export {
  scanPaths,
  scanBatch,
  startScan,
  type PendingScan,
  scanPathsOrThrow,
  type ScanBatch,
  type ScanOptions,
  type ScanEntry,
  type ScanEntryOk,
  type ScanEntryFailed,
  type ScanError,
  type FileKind,
} from './scan.js';
export { walkTree, walkTreeSync, walkTreeAgainst, walkTreeAgainstSync, walkName, walkRelPath, WalkKind, WALK_KIND_NAMES, type WalkResult, type WalkOptions, type WalkAgainst } from './walk.js';
export { readChunks, ChunkStream, DEFAULT_PIECE_SIZE, type ChunkPiece, type FileIdentity, type ReadChunksOptions } from './stream.js';
export { fdLock, fdRead, fdWrite, fuseSpin, fuseSpinStats, RequestReader, type HeldRequest, fdWritev, makeNode, writeBehind, writeBehindDrain, writeBehindChanged, writeBehindPending, writeBehindModes, writeBehindRead } from './fd.js';
export { fuseBackingClose, fuseBackingOpen, fuseMount, receiveFd, socketPair, unmount } from './mount.js';
export { setXattr, removeXattr, getXattrs, listXattrs, setTimes, type XattrEntry } from './xattr.js';
export { CowPages, CowSource, COW_PAGE, type CowCopy, type CowSegment, type RechunkIo, type RechunkResult } from './cow.js';
export { mallocStats, mallocTrim, mallocTrimSoon, mallocStreamHeap, mallocTune, nativeInfo, realtimeNs, type NativeInfo } from './info.js';
export { zstdCompress, zstdCompressStart, zstdCompressResult, zstdDecompress, zstdDecompressInto, ZSTD_VERSION } from './zstd.js';
export { decodeRun, runTasksAlive, startRun, RUN_FIELDS, RunCodec, type RunTask } from './run.js';
export { ADDON_PATH, BLOB_ENTRY, BLOB_HANDLE_SQL, BlobRead, blobRead } from './blobs.js';
export { zstdTrainDictionary, zstdDictCompress, zstdDictDecompress, zstdDictDecompressInto } from './zstd-dict.js';
export { BackgroundTraining } from './zstd-train-thread.js';
