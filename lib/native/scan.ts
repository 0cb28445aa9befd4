/**
 * scanPaths: lstat + xattrs + symlink target + stable read and digest of regular files, for many
 * paths at once on the thread pool. A failing path fails only its own entry.
 */
import { invalidArgument, LayerFsError, type ErrorCode } from '../errors.js';
import { native, type RawScanBatch } from './binding.js';
import { resolveBatchOptions, type BatchOptions, type ContentDigest } from './batch.js';
import { toChunkRefs, type ChunkRef } from './chunker.js';
import { displayPath, toPathBuffer } from './params.js';
import { fromNative } from './wrap.js';
import type { XattrEntry } from './xattr.js';

export interface ScanOptions extends BatchOptions {
  /**
   * Return each regular file's bytes as `data` (default true). Files are read whole, so a batch
   * holds all its files in memory at once: callers size batches. With false, files are streamed
   * through the chunker in 1 MiB pieces and never held whole.
   */
  readData?: boolean;
  /**
   * With readData, regular files larger than this many bytes are not returned whole (no `data`):
   * they are digested by streaming in 1 MiB pieces, like readData: false, so one huge file
   * cannot make a batch huge. Default: no limit (a file over 4 GiB then fails with EFBIG).
   */
  maxDataSize?: number;
  /**
   * With readData, the most bytes of file data one call returns in total; files that would go
   * over are handled like files over maxDataSize (which ones depends on thread timing). Bounds a
   * batch's memory whatever its files' sizes. Default: no limit.
   */
  maxBatchData?: number;
  /**
   * With readData, read files into this Buffer instead of one new Buffer per file: each entry's
   * `data` is a view of it, so the caller decides when the memory is reused (no allocation or
   * garbage per file). Files that do not fit in what is left of it are handled like files over
   * maxDataSize. Do not touch the arena until the promise settles.
   */
  dataArena?: Buffer;
  /**
   * false: files over maxDataSize (or maxBatchData) are not read at all; their entry has
   * metadata and xattrs but no `digest` and no `data`, for callers that read them another way
   * (readChunks, given the entry as `expect`, checks it is still the same file). Default true.
   */
  digestOversize?: boolean;
  /** Collect user.* extended attributes (default true). */
  xattrs?: boolean;
  /** Extra reads when a file changes while it is read, before ERR_FILE_CHANGED (default 2). */
  retries?: number;
}

export type FileKind = 'file' | 'dir' | 'symlink' | 'fifo' | 'chardev' | 'blockdev' | 'socket' | 'unknown';

export interface ScanError {
  /** ERR_NATIVE_IO (a syscall failed; see errno) or ERR_FILE_CHANGED (kept changing). */
  code: Extract<ErrorCode, 'ERR_NATIVE_IO' | 'ERR_FILE_CHANGED' | 'ERR_NATIVE'>;
  /** errno name such as 'ENOENT'; absent for ERR_FILE_CHANGED. */
  errno?: string;
  /** The path as text (non-UTF-8 bytes are replaced), for messages. */
  path: string;
  message: string;
}

export interface ScanEntryOk {
  /** The path exactly as passed in. */
  path: string | Buffer;
  error?: undefined;
  kind: FileKind;
  /** st_mode & 0o7777: permission bits with setuid, setgid and sticky. */
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  dev: bigint;
  nlink: number;
  rdev: number;
  /** user.* attributes; empty when options.xattrs is false. */
  xattrs: XattrEntry[];
  /** Symlinks only: the target bytes (never followed). */
  linkTarget?: Buffer;
  /**
   * Regular files (see ContentDigest); metadata is from the same open file as the bytes. Absent
   * for a file over maxDataSize with digestOversize: false.
   */
  digest?: ContentDigest;
  /**
   * Regular files with readData, up to maxDataSize: the bytes (not copied: owned by this Buffer,
   * or a view of options.dataArena).
   */
  data?: Buffer;
}

export interface ScanEntryFailed {
  path: string | Buffer;
  error: ScanError;
}

export type ScanEntry = ScanEntryOk | ScanEntryFailed;

export type { ChunkRef };

/** Index = the addon's kind code (native/napi_scan_results.cc); 0 is a failed entry. */
const KINDS: FileKind[] = ['unknown', 'file', 'dir', 'symlink', 'fifo', 'chardev', 'blockdev', 'socket', 'unknown'];

export async function scanPaths(paths: (string | Buffer)[], opts?: ScanOptions): Promise<ScanEntry[]> {
  if (!Array.isArray(paths)) throw invalidArgument('paths must be an array of strings or Buffers', { argument: 'paths' });
  const buffers = paths.map((p, i) => toPathBuffer(p, `paths[${i}]`));
  const o = (opts ?? {}) as ScanOptions;
  const raw = resolveBatchOptions(opts, { readData: o.readData, maxDataSize: o.maxDataSize, maxBatchData: o.maxBatchData, dataArena: o.dataArena, digestOversize: o.digestOversize, xattrs: o.xattrs, retries: o.retries });
  let b: RawScanBatch;
  try {
    b = await native.scanPaths(buffers, raw);
  } catch (e) {
    throw fromNative(e);
  }
  return toEntries(paths, b, o.dataArena);
}

function toEntries(paths: (string | Buffer)[], b: RawScanBatch, arena: Buffer | undefined): ScanEntry[] {
  const out = new Array<ScanEntry>(paths.length);
  let chunkAt = 0;
  for (let i = 0; i < paths.length; i++) {
    const path = paths[i]!;
    if (b.kind[i] === 0) continue;
    const e: ScanEntryOk = {
      path,
      kind: KINDS[b.kind[i]!]!,
      mode: b.mode[i]!,
      uid: b.uid[i]!,
      gid: b.gid[i]!,
      size: b.size[i]!,
      mtimeNs: b.mtimeNs[i]!,
      ctimeNs: b.ctimeNs[i]!,
      ino: b.ino[i]!,
      dev: b.dev[i]!,
      nlink: b.nlink[i]!,
      rdev: b.rdev[i]!,
      xattrs: [],
    };
    const dk = b.digestKind[i]!;
    if (dk !== 0) {
      const n = b.chunkCounts[i]!;
      const chunks = n === 0 ? [] : toChunkRefs(b.chunkLengths.subarray(chunkAt, chunkAt + n), b.chunkIds.subarray(chunkAt * 32, (chunkAt + n) * 32));
      chunkAt += n;
      e.digest = { chunked: dk === 2, contentId: b.contentIds.subarray(i * 32, i * 32 + 32), chunks };
    }
    const at = b.arenaOffset[i]!;
    const data = at >= 0 ? arena!.subarray(at, at + e.size) : b.data[i];
    if (data) e.data = data;
    out[i] = e;
  }
  for (let k = 0, start = 0; k < b.xattrIndex.length; k++) {
    const end = b.xattrEnds[k]!;
    (out[b.xattrIndex[k]!] as ScanEntryOk).xattrs.push({ name: b.xattrNames[k]!, value: b.xattrValues.subarray(start, end) });
    start = end;
  }
  for (let k = 0, start = 0; k < b.linkIndex.length; k++) {
    const end = b.linkEnds[k]!;
    (out[b.linkIndex[k]!] as ScanEntryOk).linkTarget = b.linkTargets.subarray(start, end);
    start = end;
  }
  for (const [i, code, errno, message] of b.errors) {
    const path = paths[i]!;
    const error: ScanError = { code: code as ScanError['code'], path: displayPath(path), message: `${displayPath(path)}: ${message}` };
    if (errno !== undefined) error.errno = errno;
    out[i] = { path, error };
  }
  return out;
}

/** Like scanPaths, but throws a LayerFsError (code of the entry, with path and errno) for the first failed entry. */
export async function scanPathsOrThrow(paths: (string | Buffer)[], opts?: ScanOptions): Promise<ScanEntryOk[]> {
  const entries = await scanPaths(paths, opts);
  for (const e of entries) {
    if (e.error) {
      const details: { path: string; errno?: string } = { path: e.error.path };
      if (e.error.errno !== undefined) details.errno = e.error.errno;
      throw new LayerFsError(e.error.code, e.error.message, details);
    }
  }
  return entries as ScanEntryOk[];
}
